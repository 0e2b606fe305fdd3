"""Small plain-PyTorch models to try the torch importer on (needs torch when imported).

Each module has a ``build(...)`` factory returning ``(module, example_inputs)``, usable as
``chipwise.workload.examples.gpt2_like:build`` (see ``chipwise.workload.from_torch``):

* ``gpt2_like``: a GPT-2-style decoder (learned positions, pre-norm, GELU MLP, tied head);
* ``resnet_like``: a ResNet-50-style CNN (bottleneck blocks, stages [3, 4, 6, 3]);
* ``unet_like``: a diffusion U-Net block (timestep embedding, GroupNorm residual convs,
  down/up path with skips, self-attention at the bottleneck).

Defaults are small so a trace takes well under a second; every size is a keyword.
This package imports nothing itself; the modules import torch.
"""

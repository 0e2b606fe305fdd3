"""What to choose: enumerate chips x counts x plans, rank by the objective, explain with the
article's situations."""

from chipwise.advise.option import Option
from chipwise.advise.options import AdviseOptions, build_request, check_options
from chipwise.advise.recommend import Excluded, NonMLAnswer, Recommendation, recommend
from chipwise.advise.request import AdviseError, AdviseRequest, Finding, ProjectFacts
from chipwise.advise.situations import Reason

__all__ = [
    "AdviseError",
    "AdviseOptions",
    "AdviseRequest",
    "Excluded",
    "Finding",
    "NonMLAnswer",
    "Option",
    "ProjectFacts",
    "Reason",
    "Recommendation",
    "build_request",
    "check_options",
    "recommend",
]

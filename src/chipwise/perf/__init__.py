"""chipwise.perf"""

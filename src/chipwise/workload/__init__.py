"""chipwise.workload"""

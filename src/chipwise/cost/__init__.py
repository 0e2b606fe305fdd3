"""chipwise.cost"""

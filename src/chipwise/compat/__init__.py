"""chipwise.compat"""

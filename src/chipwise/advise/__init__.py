"""chipwise.advise"""

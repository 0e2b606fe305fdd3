"""chipwise.bench"""

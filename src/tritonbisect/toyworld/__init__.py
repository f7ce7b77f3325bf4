"""toyworld"""

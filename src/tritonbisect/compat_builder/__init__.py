"""compat_builder"""

"""tritonparse"""

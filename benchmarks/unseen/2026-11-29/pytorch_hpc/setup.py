from setuptools import setup, find_packages
setup(name="pytorch_hpc", packages=find_packages(), entry_points={"console_scripts": ["pythpc=pytorch_hpc.cli:main"]})

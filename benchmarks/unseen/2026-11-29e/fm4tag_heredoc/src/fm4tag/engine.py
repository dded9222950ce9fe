from fm4tag.cli.engine import main

__all__ = ['main']

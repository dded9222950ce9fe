"""The one exception type the CLI and the bot turn into a message for a person."""


class MapleError(Exception):
    """An error a user can act on. `exit_code` follows the CLI convention:
    1 = a check or verification failed, 2 = usage or input error."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code

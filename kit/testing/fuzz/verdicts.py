"""What a fuzz case can find. Tests fail on any of them; bench/fuzz.py counts them by kind."""


class Crash(AssertionError):
    """The component raised, died, or answered with a server error (5xx)."""


class Hang(AssertionError):
    """The component did not answer within its time limit."""


class Unclear(AssertionError):
    """The component refused the input without a message that names what is wrong."""


class Wrong(AssertionError):
    """The component answered, but not as it must (a changed state, a stream that differs from the parse)."""

"""ticketd's Python client: snowflake IDs and sequence values from a local
buffer, refilled from ticketd in the background (standard library only).

    from ticketd_client import Client

    with Client(["http://10.0.0.5:8080", "http://10.0.0.6:8080"]) as c:
        id = c.next()

The contract it keeps (unique always, never older than max_age, failover,
strictly increasing IDs, sequences, tokens, TLS, close) is docs/client.md
of the ticketd repository; this client's page is docs/clients/python.md.
"""

from ._client import Client
from ._config import Config
from ._errors import (BadAnswerError, BadConfigError, BadNameError, ClosedError, DeadlineError, RejectedError,
                      StatusError, TicketdError, UnavailableError)

__version__ = "0.1.0"

__all__ = ["Client", "Config", "TicketdError", "BadConfigError", "UnavailableError", "RejectedError",
           "BadNameError", "ClosedError", "BadAnswerError", "DeadlineError", "StatusError", "__version__"]

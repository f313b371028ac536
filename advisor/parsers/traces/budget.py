"""How much of a trace the engine holds at once, whatever the format.

A trace of any size is decoded into columns that are written out to spill files whenever they
pass FLUSH_BYTES, and reduced a group of about GROUP_ROWS device operations at a time when it
holds more; both are read at the moment of use, so a test can make them small.
"""

from __future__ import annotations

# rows held by one decoding process before they are written out (~600 k kernels with launches)
FLUSH_BYTES = 16 * 1024 * 1024
# device operations measured at a time (~150 bytes each with their flows or launches)
GROUP_ROWS = 1_000_000
# a sample of the rows' start times, one in this many, plans the groups without reading them
SAMPLE_EVERY = 2048

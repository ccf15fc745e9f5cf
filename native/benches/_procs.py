"""What the Python benchmarks read of a process: its resident memory."""


def rss_kib(pid):
    """Process `pid`'s resident memory (VmRSS), in KiB; 0 once it is gone."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0

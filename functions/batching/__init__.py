"""Waiting for the burst: batch windows, the rules that end a burst, the run each window
starts, and what a failed run means for its batch."""

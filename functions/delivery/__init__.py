"""What goes out: each reply part sent once through Twilio, paced to its sender, resent when
Twilio asks, and the batch announced to other services."""

"""A message arriving: the webhook's form read and checked, and the message staged until its
batch is answered."""

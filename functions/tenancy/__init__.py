"""Who a conversation belongs to: the tenants (Twilio accounts) and their secrets, projects,
and the conversations themselves with their processing lock."""

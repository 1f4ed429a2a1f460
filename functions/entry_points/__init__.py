"""The entry points' operations (webhook, status callback, reconciler, helpdesk commands): each
composes the features, none imports another."""

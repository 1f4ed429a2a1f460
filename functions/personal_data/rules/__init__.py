"""The personal-data feature's pure rules: which vendor ids a conversation made, what an
export gives back, and which turn texts have expired (retention)."""

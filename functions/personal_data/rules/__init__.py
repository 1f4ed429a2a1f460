"""The personal-data feature's pure rules: which vendor ids a conversation made, and what an
export gives back."""

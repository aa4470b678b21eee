"""Who may call the API: the admin key from settings, and scoped keys bound to one user."""

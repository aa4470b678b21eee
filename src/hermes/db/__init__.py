"""The database part: `hermes db migrate|status|copy` and the database's `/health` entry."""

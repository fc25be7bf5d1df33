"""A reader's feed preferences: the settings and their form."""

"""Published wheels: bisect released and nightly versions with installs only."""

"""Input side: reading columns, encoding ids, grouping rows per user."""

"""The agent: conversation loop, events, sessions, compression."""

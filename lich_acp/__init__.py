"""lich_acp: lich's agent over the Agent Client Protocol (ACP v1, stdio), on the official SDK.

The ACP connection runs on the main thread's event loop; every session's agent runs on one
worker thread with its own loop (lich_core's Workspace reads are synchronous, and a read that
goes to the client through fs/read_text_file must block only the agent, never the connection).
`events.ClientBridge` carries calls from the agent's loop to the client.
"""

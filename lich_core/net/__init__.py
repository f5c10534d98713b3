"""Outbound network access for lich's tools.

Every outbound request of every network tool (fetch_url, http_request, web_search) goes through
`lich_core.net.safe_fetch.safe_fetch`: one pinned, SSRF-safe fetch (see that module's docstring).

Import the names from the submodule (`from lich_core.net.safe_fetch import safe_fetch`); this
package re-exports nothing, so `lich_core.net.safe_fetch` stays the module and is never shadowed
by the function of the same name.
"""

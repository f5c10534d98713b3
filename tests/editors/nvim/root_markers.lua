-- Root detection: the nearest directory holding any marker is the root. The tree (made by the
-- pytest side under $LICH_TEST_WORKSPACE):
--   outer/.lich/config.json, outer/proj/.git/, outer/proj/a.py    -> proj (nearer .git wins)
--   outer/bare/.lich/ (no config.json), outer/bare/b.py           -> outer (.lich needs config.json)
--   outer/pkg/pyproject.toml, outer/pkg/sub/c.py                  -> pkg
-- Then a real attach: the lich client for a.py starts with root_dir, workspace folder and the
-- server's own root all at proj.
return function(H)
  local outer = H.data.outer
  local proj = outer .. "/proj"
  local client_mod = require("lich.client")
  local defaults = client_mod.defaults.root_markers

  local function root_of(path, markers)
    return client_mod.find_root(path, markers or defaults)
  end

  H.check("a nearer .git beats an ancestor .lich/config.json", root_of(proj .. "/a.py") == proj, root_of(proj .. "/a.py"))
  H.check(
    "a .lich without config.json is no marker",
    root_of(outer .. "/bare/b.py") == outer,
    root_of(outer .. "/bare/b.py")
  )
  H.check(
    "the nearest marker of any kind wins",
    root_of(outer .. "/pkg/sub/c.py") == outer .. "/pkg",
    root_of(outer .. "/pkg/sub/c.py")
  )
  H.check("a file at the .lich root itself", root_of(outer .. "/top.py") == outer, root_of(outer .. "/top.py"))
  -- The older nested shape of the option still works, with the same nearest-wins meaning.
  local legacy = { ".lich", { ".git", "pyproject.toml" } }
  H.check("nested root_markers are flattened", root_of(proj .. "/a.py", legacy) == proj, root_of(proj .. "/a.py", legacy))
  -- A user's own list is honoured as given: without .git, a.py's nearest marker is outer's .lich.
  H.check(
    "user root_markers replace the defaults",
    root_of(proj .. "/a.py", { ".lich" }) == outer,
    root_of(proj .. "/a.py", { ".lich" })
  )
  H.check("no marker, no root", root_of(proj .. "/a.py", { "no-such-marker" }) == nil)

  -- The real client through setup() (0.7: start_client, 0.11: vim.lsp.config + enable).
  require("lich").setup({ cmd = { H.env.python, "-m", "lich_lsp" } })
  vim.cmd("edit " .. proj .. "/a.py")
  local buf = vim.api.nvim_get_current_buf()
  local client = H.wait_client(buf)
  local root_dir = client.root_dir or client.config.root_dir
  H.values.root_dir = root_dir
  H.check("client root_dir is proj", root_dir == proj, root_dir)
  local folders = client.workspace_folders or client.config.workspace_folders or {}
  H.values.workspace_folders = folders
  H.check(
    "workspace folder is proj",
    folders[1] and vim.uri_to_fname(folders[1].uri) == proj,
    folders
  )
  local err, status = H.execute("lich.status", vim.empty_dict())
  H.check("lich.status answered", err == nil, err)
  H.values.server_root = status and status.root
  H.check("the server's root is proj", status and status.root == proj, status)
end

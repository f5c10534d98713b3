-- Building the lich client config and starting/attaching it, once per Neovim generation:
--   0.11+     vim.lsp.config + vim.lsp.enable (the built-in config system)
--   0.8-0.10  vim.lsp.start per buffer (reuses the client for the same name and root)
--   0.7       vim.lsp.start_client + vim.lsp.buf_attach_client, one client per root, tracked here
local compat = require("lich.compat")
local progress = require("lich.progress")
local transcript = require("lich.transcript")

local M = {}

M.defaults = {
  name = "lich",
  -- nil: `lich-lsp` when on PATH, else `python3 -m lich_lsp`.
  cmd = nil,
  cmd_env = nil,
  -- nil: every file buffer (0.11+: every buffer with a filetype) inside a root.
  filetypes = nil,
  -- Searched upwards from the buffer's file: the nearest directory holding any of these names is
  -- the root (all names are equal; nested lists are flattened). `.lich` counts only when it
  -- holds config.json, so a `.lich` left behind without a config does not capture a project.
  root_markers = { ".lich", ".git", ".hg", "pyproject.toml", "package.json", "Cargo.toml", "go.mod" },
  -- Attach to files outside any root, using the file's directory as the root.
  single_file = false,
  autostart = true,
  -- The `lich` section answered to workspace/configuration.
  settings = {},
  -- LSP initializationOptions (same keys as .lich/config.json).
  init_options = {},
  capabilities = nil,
  on_attach = nil,
  progress = true,
  transcript_max_lines = 5000,
  -- Ghost text from the server's completion model (on whenever the server has one); see
  -- :help lich-completion.
  completion = {
    enabled = true,
    accept_key = "<C-l>",
    accept_word_key = "<M-Right>",
    accept_line_key = "<M-C-Right>",
    accept_tab = true,
  },
}

--- `lich-lsp` on PATH, else the Python that has `lich_lsp` installed.
---@return string[]
function M.default_cmd()
  if vim.fn.executable("lich-lsp") == 1 then
    return { "lich-lsp" }
  end
  local python = vim.g.python3_host_prog
  if type(python) ~= "string" or vim.fn.executable(python) ~= 1 then
    python = vim.fn.executable("python3") == 1 and "python3" or "python"
  end
  return { python, "-m", "lich_lsp" }
end

-- A marker directory that is only a marker when it holds this file (see defaults.root_markers).
M.marker_requires = { [".lich"] = "config.json" }

--- The marker names of a root_markers option: strings, and nested lists of strings (the older
--- `{ ".lich", { ".git", ... } }` shape) flattened in order.
---@param markers table|string|nil
---@return string[]
function M.marker_names(markers)
  local names = {}
  local function add(entry)
    if type(entry) == "string" and entry ~= "" then
      table.insert(names, entry)
    elseif type(entry) == "table" then
      for _, item in ipairs(entry) do
        add(item)
      end
    end
  end
  add(markers)
  return names
end

local function has_marker(dir, name)
  local required = M.marker_requires[name]
  local path = dir .. "/" .. name
  if required then
    path = path .. "/" .. required
  end
  return vim.loop.fs_stat(path) ~= nil
end

--- Nearest directory at or above the directory of `path` holding any root marker (see
--- defaults.root_markers): a `.git` in /x/proj beats a `.lich/config.json` in /x.
---@param path string
---@param markers table
---@return string|nil
function M.find_root(path, markers)
  if not path or path == "" then
    return nil
  end
  local names = M.marker_names(markers)
  if #names == 0 then
    return nil
  end
  local dir = vim.fn.fnamemodify(path, ":p:h")
  while dir and dir ~= "" do
    for _, name in ipairs(names) do
      if has_marker(dir, name) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ":h")
    if parent == dir then
      break
    end
    dir = parent
  end
  return nil
end

local function buffer_path(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return nil
  end
  if vim.api.nvim_buf_get_option(bufnr, "buftype") ~= "" then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  -- Skip unnamed buffers and non-file schemes (fugitive://, oil://, ...).
  if name == "" or name:match("^%a[%w+.-]*://") then
    return nil
  end
  return vim.fn.fnamemodify(name, ":p")
end

--- Root for a buffer under `opts`, or nil when the buffer is not ours to attach.
---@param bufnr integer
---@param opts table
---@return string|nil
function M.root_for_buffer(bufnr, opts)
  local path = buffer_path(bufnr)
  if not path then
    return nil
  end
  if opts.filetypes then
    local ft = vim.api.nvim_buf_get_option(bufnr, "filetype")
    if not vim.tbl_contains(opts.filetypes, ft) then
      return nil
    end
  end
  local root = M.find_root(path, opts.root_markers)
  if not root and opts.single_file then
    root = vim.fn.fnamemodify(path, ":h")
  end
  return root
end

-- `lich/saveDocuments {uris}`: write exactly those buffers, with no prompt, so disk matches what
-- the agent edited before a process tool runs. `write!` because the server asked right after its
-- own applied edit, so the buffer is the truth; read-only buffers are left alone and reported.
local function find_buffer(uri)
  local fname = vim.uri_to_fname(uri)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(bufnr)
    if name ~= "" and (vim.fn.fnamemodify(name, ":p") == fname or vim.uri_from_bufnr(bufnr) == uri) then
      return bufnr
    end
  end
  return nil
end

---@param uri string
---@return boolean saved, string|nil reason
function M.save_uri(uri)
  local bufnr = find_buffer(uri)
  if not bufnr then
    return false, "not_open"
  end
  if not vim.api.nvim_buf_is_loaded(bufnr) then
    return false, "not_loaded"
  end
  if vim.api.nvim_buf_get_option(bufnr, "readonly") then
    return false, "readonly"
  end
  if not vim.api.nvim_buf_get_option(bufnr, "modified") and vim.loop.fs_stat(vim.uri_to_fname(uri)) then
    return true, nil
  end
  local dir = vim.fn.fnamemodify(vim.uri_to_fname(uri), ":h")
  if vim.fn.isdirectory(dir) == 0 then
    vim.fn.mkdir(dir, "p")
  end
  local ok, err = pcall(vim.api.nvim_buf_call, bufnr, function()
    vim.cmd("silent keepalt keepjumps write!")
  end)
  if not ok then
    return false, tostring(err)
  end
  return true, nil
end

function M.handle_save_documents(_, params, _)
  local saved, failed = {}, {}
  for _, uri in ipairs(type(params) == "table" and params.uris or {}) do
    local ok, reason = M.save_uri(uri)
    if ok then
      table.insert(saved, uri)
    else
      table.insert(failed, { uri = uri, reason = reason })
    end
  end
  return { saved = saved, failed = failed }
end

local MESSAGE_LEVELS = {
  [1] = vim.log.levels.ERROR,
  [2] = vim.log.levels.WARN,
  [3] = vim.log.levels.INFO,
  [4] = vim.log.levels.DEBUG,
}

--- `window/showMessage` from the lich server, through vim.notify: a one-line message stays one
--- line. (Neovim 0.11's own handler echoes "LSP[name][Type] message\n", and that trailing
--- newline alone makes a hit-enter prompt for every message; the server's messages start with
--- "lich:" already.) A notification plugin shows them its way.
function M.handle_show_message(_, params, _)
  if type(params) ~= "table" or type(params.message) ~= "string" then
    return vim.NIL
  end
  vim.notify(params.message, MESSAGE_LEVELS[params.type] or vim.log.levels.INFO)
  return vim.NIL
end

function M.handle_event(_, params, _)
  pcall(transcript.on_event, params)
  pcall(require("lich.chat").on_event, params)
end

-- Code actions carry `lich.ask`; prompting for the text is the editor's half of the command.
local function ask_command(command, ctx)
  local args = (command.arguments or {})[1]
  if type(args) ~= "table" then
    args = {}
  end
  require("lich").ask({
    prompt = args.prompt,
    uri = args.uri,
    range = args.range,
    mode = args.mode,
    client_id = ctx and ctx.client_id,
    bufnr = ctx and ctx.bufnr,
    extra = args,
  })
end

--- Client capabilities: Neovim's own plus the lich experimental flag, and inline completions
--- while the plugin's ghost text is on (the server then answers textDocument/completion with
--- nothing, so nvim-cmp or omnifunc do not ask the model a second time for the same text).
---@param extra table|nil
---@param completion table|nil the `completion` option
---@return table
function M.capabilities(extra, completion)
  local base = vim.lsp.protocol.make_client_capabilities()
  if not completion or completion.enabled ~= false then
    base.textDocument = base.textDocument or {}
    base.textDocument.inlineCompletion = { dynamicRegistration = false }
  end
  base = vim.tbl_deep_extend("force", base, extra or {})
  base.experimental = base.experimental or {}
  base.experimental.lich = vim.tbl_deep_extend("force", base.experimental.lich or {}, { saveDocuments = true })
  return base
end

--- `value` as a JSON object: an empty Lua table is encoded as `[]`, which is no object (the
--- server would read a `lich` key holding a list), so it goes out as vim.empty_dict() (`{}`).
---@param value table|nil
---@return table
function M.as_object(value)
  if value == nil or next(value) == nil then
    return vim.empty_dict()
  end
  return value
end

--- The client config shared by every start strategy (no root yet).
---@param opts table merged with defaults
---@return table
function M.base_config(opts)
  local handlers = {
    ["lich/saveDocuments"] = M.handle_save_documents,
    ["lich/event"] = M.handle_event,
    ["window/showMessage"] = M.handle_show_message,
  }
  if opts.progress and not compat.has_progress_autocmd then
    handlers["$/progress"] = progress.legacy_handler(opts.name)
  end
  local config = {
    name = opts.name,
    cmd = opts.cmd or M.default_cmd(),
    cmd_env = opts.cmd_env,
    capabilities = M.capabilities(opts.capabilities, opts.completion),
    handlers = vim.tbl_extend("force", handlers, opts.handlers or {}),
    commands = { ["lich.ask"] = ask_command },
    -- workspace/configuration looks sections up in here, so nest ours under "lich".
    settings = { lich = M.as_object(opts.settings) },
    init_options = M.as_object(opts.init_options),
    on_attach = function(client, bufnr)
      if not compat.has_lsp_start then
        -- 0.8+ wires ghost text on LspAttach (plugin/lich.lua), which an on_attach given to
        -- vim.lsp.config cannot replace; 0.7 has no LspAttach.
        require("lich.ghost").attach(client, bufnr, opts.completion)
      end
      if opts.on_attach then
        opts.on_attach(client, bufnr)
      end
    end,
    -- A (re)started server: the chat draws its thread again; a stopped one ends its turn.
    on_init = function()
      vim.schedule(function()
        pcall(require("lich.chat").on_client_init)
      end)
    end,
    on_exit = function(_, _, client_id)
      vim.schedule(function()
        require("lich.ghost").forget(client_id)
        pcall(require("lich.chat").on_client_exit)
      end)
    end,
  }
  return config
end

--- A full config for vim.lsp.config (0.11+), as lsp/lich.lua returns it.
---@param opts table merged with defaults
---@return table
function M.lsp_config(opts)
  local config = M.base_config(opts)
  config.filetypes = opts.filetypes
  config.root_dir = function(bufnr, on_dir)
    local root = M.root_for_buffer(bufnr, opts)
    if root then
      on_dir(root)
    end
  end
  return config
end

-- 0.7: one client per root, remembered here so later buffers reuse it.
local legacy_clients = {}

--- Attach the lich client to `bufnr` when it lies in a root (start the client if needed).
---@param bufnr integer
---@param opts table merged with defaults
---@return integer|nil client_id
function M.attach(bufnr, opts)
  local root = M.root_for_buffer(bufnr, opts)
  if not root then
    return nil
  end
  local config = M.base_config(opts)
  config.root_dir = root
  config.workspace_folders = { { uri = vim.uri_from_fname(root), name = root } }
  if compat.has_lsp_start then
    return vim.lsp.start(config, { bufnr = bufnr })
  end
  local client_id = legacy_clients[root]
  local client = client_id and vim.lsp.get_client_by_id(client_id)
  if not client or compat.is_stopped(client) then
    client_id = vim.lsp.start_client(config)
    legacy_clients[root] = client_id
  end
  if client_id then
    vim.lsp.buf_attach_client(bufnr, client_id)
  end
  return client_id
end

--- Start attaching: the built-in enable on 0.11+, our own autocmds before.
---@param opts table merged with defaults
function M.enable(opts)
  if compat.has_lsp_config then
    vim.lsp.config(opts.name, M.lsp_config(opts))
    vim.lsp.enable(opts.name)
    return
  end
  local group = vim.api.nvim_create_augroup("lich_attach", { clear = true })
  local events = opts.filetypes and { "FileType" } or { "BufReadPost", "BufNewFile" }
  vim.api.nvim_create_autocmd(events, {
    group = group,
    callback = function(args)
      M.attach(args.buf, opts)
    end,
  })
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      M.attach(bufnr, opts)
    end
  end
end

return M

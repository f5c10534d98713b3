-- User commands exist as soon as the plugin is on 'runtimepath', so they also serve users who
-- start the client through vim.lsp.enable("lich") (lsp/lich.lua) without calling setup().
if vim.g.loaded_lich then
  return
end
vim.g.loaded_lich = true

local function lich()
  return require("lich")
end

vim.api.nvim_create_user_command("LichAsk", function(cmd)
  lich().command_ask(cmd)
end, { nargs = "*", range = true, desc = "lich: ask the agent (about the selected lines)" })

vim.api.nvim_create_user_command("LichCancel", function(cmd)
  lich().command_cancel(cmd)
end, { nargs = "?", desc = "lich: cancel a task (all running tasks without an id)" })

vim.api.nvim_create_user_command("LichApplyPatch", function(cmd)
  lich().command_apply_patch(cmd)
end, { nargs = "?", range = true, desc = "lich: apply a hashline patch from a register or this buffer" })

vim.api.nvim_create_user_command("LichStatus", function()
  lich().status()
end, { nargs = 0, desc = "lich: server status, provider and running tasks" })

vim.api.nvim_create_user_command("LichTrust", function(cmd)
  lich().command_trust(cmd)
end, {
  nargs = "?",
  complete = function()
    return { "revoke" }
  end,
  desc = "lich: trust this workspace's .lich/config.json (revoke: withdraw the trust)",
})

vim.api.nvim_create_user_command("LichTest", function(cmd)
  lich().command_test(cmd)
end, { nargs = "*", desc = "lich: run the tests (filter appended to the test command); failures become diagnostics" })

vim.api.nvim_create_user_command("LichUndo", function(cmd)
  lich().command_undo(cmd)
end, { nargs = "?", desc = "lich: undo every change of an agent task (pick one without a task id)" })

vim.api.nvim_create_user_command("LichTranscript", function()
  lich().open_transcript()
end, { nargs = 0, desc = "lich: open the transcript buffer" })

vim.api.nvim_create_user_command("LichChat", function(cmd)
  require("lich.chat").command_chat(cmd)
end, { nargs = "*", desc = "lich: toggle the chat; with a message, open it and send (queued while a turn runs)" })

vim.api.nvim_create_user_command("LichUnqueue", function(cmd)
  require("lich.chat").command_unqueue(cmd)
end, { nargs = "?", desc = "lich: take back a queued chat message (the last one without a number)" })

vim.api.nvim_create_user_command("LichThreads", function()
  require("lich.chat").pick_thread()
end, { nargs = 0, desc = "lich: pick a thread of this workspace and show it in the chat" })

vim.api.nvim_create_user_command("LichNewThread", function()
  require("lich.chat").new_thread()
end, { nargs = 0, desc = "lich: start a new thread in the chat" })

vim.api.nvim_create_user_command("LichRewind", function(cmd)
  require("lich.chat").command_rewind(cmd)
end, { nargs = "?", desc = "lich: rewind the chat's thread to before the turn under the cursor (or the turn given)" })

-- Ghost text for every buffer the lich client attaches to (0.7: the client's on_attach).
if vim.fn.has("nvim-0.8") == 1 then
  vim.api.nvim_create_autocmd("LspAttach", {
    group = vim.api.nvim_create_augroup("lich_ghost_attach", { clear = true }),
    callback = function(args)
      local config = lich().config
      local client = vim.lsp.get_client_by_id(args.data.client_id)
      if client and client.name == config.name then
        require("lich.ghost").attach(client, args.buf, config.completion)
      end
    end,
  })
end

-- LspProgress (0.10+) is client-agnostic; 0.7-0.9 get a $/progress handler in the client config.
require("lich.progress").attach_autocmd("lich")

-- With no suggestion shown, the accept key does what it did before the plugin mapped it: here
-- the user's own Insert-mode <Tab> mapping (inserting "<TAB>"), chained rather than shadowed.
return function(H)
  local type_in_insert = dofile(vim.fn.fnamemodify(H.env.scenario, ":h") .. "/insert_steps.lua")
  vim.keymap.set("i", "<Tab>", "<lt>TAB>", { desc = "the user's own" })
  vim.cmd("edit " .. H.env.workspace .. "/hello.py")
  local buf = vim.api.nvim_get_current_buf()
  require("lich").setup({ cmd = { H.env.python, "-m", "lich_lsp" } })
  local client = H.wait_client(buf)
  local next_edit = require("lich.next_edit")
  H.wait("the plugin read the server's next-edit model", 30000, function()
    return next_edit.model(client.id).known
  end)
  local map = vim.fn.maparg("<Tab>", "i", false, true)
  H.values.tab_desc = map.desc
  type_in_insert(H, "Gox<Tab>y", {
    {
      what = "the user's <Tab> ran",
      wait = function()
        H.values.seen = vim.api.nvim_get_current_line()
        return H.values.seen == "x<TAB>y"
      end,
      feed = "<Esc>",
    },
  })
  H.values.line = vim.api.nvim_buf_get_lines(buf, 2, 3, false)[1]
  H.values.shown = next_edit.current() ~= nil
end

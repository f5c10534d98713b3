;;; next_edit_tmux_init.el --- Emacs in a terminal for the next-edit test  -*- lexical-binding: t; -*-
;; Run by tests/editors/test_emacs_next_edit.py in a tmux pane as a person runs Emacs:
;;   emacs -nw -q -L editors/emacs -l tests/editors/emacs/next_edit_tmux_init.el
;; Environment: LICH_TEST_WORKSPACE, LICH_TEST_PYTHON.  Opens calc.py through Eglot with
;; `lich-next-edit-mode' on (autoloaded from lich.el) and point on `count' in line 2.  Nothing
;; else is scripted: the test types.

(require 'eglot)
(require 'lich-eglot)

(setq lich-eglot-command (list (getenv "LICH_TEST_PYTHON") "-m" "lich_lsp")
      eglot-sync-connect t
      eglot-connect-timeout 60
      inhibit-startup-screen t
      make-backup-files nil
      auto-save-default nil
      create-lockfiles nil)
(menu-bar-mode -1)

(find-file (expand-file-name "calc.py" (getenv "LICH_TEST_WORKSPACE")))
(lich-eglot-start)
(lich-next-edit-mode 1)
(goto-char (point-min))
(forward-line 1)
(back-to-indentation)

;;; next_edit_tmux_init.el ends here

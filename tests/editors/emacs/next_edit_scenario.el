;;; next_edit_scenario.el --- next edit suggestions in Emacs  -*- lexical-binding: t; -*-
;; Run by tests/editors/test_emacs_next_edit.py (the fake Zeta model as the user config's
;; `next_edit'; it renames `count' to `total' in the editable region it is sent):
;;   emacs --batch -L editors/emacs -l tests/editors/emacs/next_edit_scenario.el
;; Environment: LICH_TEST_WORKSPACE, LICH_TEST_PYTHON, LICH_TEST_RESULT, LICH_TEST_CLIENT
;; (eglot or lsp-mode).  In calc.py with `lich-next-edit-mode' (autoloaded from lich.el): rename
;; `count' at its definition; the two uses below show as overlays (old text struck, new text
;; after it, a fringe arrow); TAB (the key as bound while a suggestion shows) moves point to the
;; first, TAB again accepts it, the same for the second; a new use typed at the end is suggested
;; and C-g dismisses it; with nothing shown TAB is the major mode's own again.

(require 'cl-lib)
(require 'subr-x)

(load (expand-file-name "lich_test_support" (file-name-directory load-file-name)) nil t)

(defconst lich-test-client (or (getenv "LICH_TEST_CLIENT") "eglot"))

(if (equal lich-test-client "lsp-mode")
    (progn
      (load "lsp-mode-autoloads" nil t)
      (require 'lsp-mode)
      (require 'lich-lsp-mode))
  (require 'eglot)
  (require 'lich-eglot))

(defvar lsp-auto-guess-root)
(defvar lsp-enable-file-watchers)
(defvar lsp-restart)
(defvar lsp-keep-workspace-alive)
(defvar lsp-session-file)
(defvar lsp-response-timeout)
(defvar lich-lsp-mode-command)
(defvar lich-next-edit--model)
(defvar lich-next-edit-stats)
(declare-function lsp "lsp-mode")
(declare-function lsp-find-workspace "lsp-mode")
(declare-function lsp-workspace-shutdown "lsp-mode")
(declare-function eglot-shutdown "eglot")
(declare-function lich-next-edit-current "lich-next-edit")

(defun lich-test-start-lsp-mode (file)
  (setq lsp-auto-guess-root t
        lsp-enable-file-watchers nil
        lsp-restart 'ignore
        lsp-keep-workspace-alive nil
        lsp-session-file (expand-file-name "lsp-session" (getenv "HOME"))
        lsp-response-timeout 60
        lich-lsp-mode-command (list (getenv "LICH_TEST_PYTHON") "-m" "lich_lsp"))
  (find-file file)
  (lsp)
  (lich-test-wait "lsp-mode initialized lich" 60
                  (lambda ()
                    (let ((workspace (lsp-find-workspace 'lich file)))
                      (and workspace
                           (eq (with-no-warnings (lsp--workspace-status workspace))
                               'initialized))))))

(defun lich-test-wait-idle (what seconds predicate)
  "`lich-test-wait', with Emacs idle meanwhile: batch Emacs never is, so its idle timers (Eglot
sends the buffer's changes from one, and holds a document's requests until then) run here each
time round, as they would while the user pauses."
  (lich-test-wait what seconds
                  (lambda ()
                    (dolist (timer (copy-sequence timer-idle-list))
                      (timer-event-handler timer))
                    (funcall predicate))))

(defun lich-test-lines-shown ()
  "The 1-based lines of the suggestions shown."
  (mapcar (lambda (s) (line-number-at-pos (car s))) (lich-next-edit-current)))

(defun lich-test-line (n)
  (save-excursion
    (goto-char (point-min))
    (forward-line (1- n))
    (buffer-substring-no-properties (line-beginning-position) (line-end-position))))

(defun lich-test-press (key)
  "Run what KEY is bound to now (the mode's keymap filters decide), as the command loop would."
  (let ((command (key-binding (kbd key))))
    (lich-test-value (intern (format "binding_%s_%d" key (length lich-test-values))) (format "%s" command))
    (call-interactively command)
    command))

(defun lich-test-run ()
  (let* ((ws (file-name-as-directory (getenv "LICH_TEST_WORKSPACE")))
         (file (expand-file-name "calc.py" ws)))
    (if (equal lich-test-client "lsp-mode")
        (lich-test-start-lsp-mode file)
      (lich-test-start-eglot file))
    (lich-test-check "lich-next-edit-mode is autoloaded from lich.el" (fboundp 'lich-next-edit-mode))
    (lich-next-edit-mode 1)
    (lich-test-wait "the server's next-edit model" 30 (lambda () lich-next-edit--model))
    (lich-test-value 'model (format "%s" lich-next-edit--model))
    ;; Rename `count' at its definition (line 2).
    (goto-char (point-min))
    (forward-line 1)
    (search-forward "count")
    (replace-match "total")
    (lich-test-wait-idle "suggestions on lines 4 and 5" 30
                    (lambda () (equal (lich-test-lines-shown) '(4 5))))
    (let ((overlays (cl-remove-if-not (lambda (o) (overlay-get o 'lich-next-edit))
                                      (overlays-in (point-min) (point-max)))))
      (lich-test-check "the old text is marked on both lines"
                       (cl-every (lambda (o) (and (eq (overlay-get o 'face) 'lich-next-edit-deleted)
                                                  (equal (buffer-substring-no-properties (overlay-start o) (overlay-end o)) "count")))
                                 overlays)
                       overlays)
      (lich-test-check "the new text shows after it"
                       (cl-every (lambda (o) (equal (substring-no-properties (or (overlay-get o 'after-string) "")) "total")) overlays)
                       overlays)
      (lich-test-check "a fringe arrow on each"
                       (cl-every (lambda (o) (equal (get-text-property 0 'display (or (overlay-get o 'before-string) " "))
                                                    '(left-fringe right-triangle lich-next-edit-fringe)))
                                 overlays)
                       overlays))
    (lich-test-check "point stayed where the user typed" (= (line-number-at-pos) 2) (point))
    (lich-test-press "TAB")
    (lich-test-check "TAB moved point to the first suggestion"
                     (and (= (line-number-at-pos) 4) (looking-at "count")) (point))
    (lich-test-check "the move changed nothing" (equal (lich-test-line 4) "        count += item"))
    (lich-test-press "TAB")
    (lich-test-check "TAB again accepted it" (equal (lich-test-line 4) "        total += item") (lich-test-line 4))
    (lich-test-wait-idle "the suggestion on line 5" 30 (lambda () (equal (lich-test-lines-shown) '(5))))
    (lich-test-press "TAB")
    (lich-test-press "TAB")
    (lich-test-check "the last use accepted" (equal (lich-test-line 5) "    return total") (lich-test-line 5))
    (lich-test-value 'renamed (buffer-substring-no-properties (point-min) (point-max)))
    ;; A new use: suggested, then dismissed with C-g.
    (goto-char (point-max))
    (insert "print(count)")
    (lich-test-wait-idle "the suggestion on the new line" 30 (lambda () (equal (lich-test-lines-shown) '(6))))
    (lich-test-press "C-g")
    (lich-test-check "C-g dismissed it" (null (lich-next-edit-current)) (lich-next-edit-current))
    (lich-test-value 'tab_without_suggestion (format "%s" (key-binding (kbd "TAB"))))
    (lich-test-value 'final (buffer-substring-no-properties (point-min) (point-max)))
    (lich-test-value 'accepted (plist-get lich-next-edit-stats :accepted))
    (if (equal lich-test-client "lsp-mode")
        (lsp-workspace-shutdown (lsp-find-workspace 'lich buffer-file-name))
      (eglot-shutdown (eglot-current-server)))))

(lich-test-main #'lich-test-run)
;;; next_edit_scenario.el ends here

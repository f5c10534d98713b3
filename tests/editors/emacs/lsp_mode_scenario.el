;;; lsp_mode_scenario.el --- batch test of editors/emacs/lich-lsp-mode.el (+ lich.el)  -*- lexical-binding: t; -*-
;; Run by tests/editors/test_emacs.py when lsp-mode is installed:
;;   emacs --batch -L editors/emacs -l tests/editors/emacs/lsp_mode_scenario.el
;; Environment: LICH_TEST_WORKSPACE, LICH_TEST_PYTHON, LICH_TEST_RESULT, LICH_TEST_PATCH.
;; Starts lich-lsp as lsp-mode's add-on client, then runs the lsp-mode commands (aliases of
;; lich.el's): status, lich.read, cancel, applyPatch (edit applied, then saved by
;; lich/saveDocuments) and trust.  Writes {"error": ..., "checks": [...], "values": {...}}.

(require 'cl-lib)
(require 'lsp-mode)
(require 'lich-lsp-mode)

(load (expand-file-name "lich_test_support" (file-name-directory load-file-name)) nil t)

(defun lich-test-lsp-mode-initialized-p ()
  (let ((workspace (lsp-find-workspace 'lich buffer-file-name)))
    (and workspace (eq (lsp--workspace-status workspace) 'initialized))))

(defun lich-test-run ()
  (let* ((ws (file-name-as-directory (getenv "LICH_TEST_WORKSPACE")))
         (file (expand-file-name "hello.py" ws)))
    ;; Our own config choices for the test: no session file in HOME, no prompts, no watchers.
    (setq lsp-auto-guess-root t
          lsp-enable-file-watchers nil
          lsp-restart 'ignore
          lsp-enable-snippet nil
          lsp-keep-workspace-alive nil
          lsp-session-file (expand-file-name "lsp-session" (getenv "HOME"))
          ;; Synchronous requests wait 10 s by default: too tight on a busy machine.
          lsp-response-timeout 60
          lich-lsp-mode-command (list (getenv "LICH_TEST_PYTHON") "-m" "lich_lsp"))
    (find-file file)
    (lsp)
    (lich-test-wait "lsp-mode initialized lich" 60 #'lich-test-lsp-mode-initialized-p)
    (let ((status (lich-lsp-mode-status)))
      (lich-test-check "server saw experimental.lich.saveDocuments"
                       (eq (lich-json-get (lich-json-get status "client") "save_documents") t)
                       status))
    (let* ((uri (lich-json-get (lsp-text-document-identifier) "uri"))
           (rows (lich-json-get (lich-lsp-mode-execute "lich.read" (list :uri uri)) "rows")))
      (lich-test-value 'rows rows)
      (lich-test-check "lich.read returns rows"
                       (and (stringp rows) (string-match-p "^2:[0-9a-f][0-9a-f]|    return 1" rows))
                       rows))
    (let ((result (lich-lsp-mode-cancel)))
      (lich-test-check "lich-lsp-mode-cancel answered"
                       (equal (lich-json-get result "cancelled") []) result))
    (let ((result (with-temp-buffer
                    (insert (getenv "LICH_TEST_PATCH"))
                    (lich-lsp-mode-apply-patch (point-min) (point-max)))))
      (unless (lich-test-check "patch applied" (eq (lich-json-get result "ok") t) result)
        (error "lich.applyPatch failed: %S" result)))
    (lich-test-wait "saved to disk" 30
                    (lambda () (string-match-p "return 2" (lich-test-file-text file))))
    (lich-test-check "buffer edited and saved, not modified"
                     (with-current-buffer (find-buffer-visiting file)
                       (and (string-match-p "return 2" (buffer-string)) (not (buffer-modified-p)))))
    (let ((result (lich-lsp-mode-trust-workspace)))
      (lich-test-check "lich-lsp-mode-trust-workspace answered"
                       (equal (lich-json-get result "state") "no_config") result))
    (lsp-workspace-shutdown (lsp-find-workspace 'lich buffer-file-name))))

(lich-test-main #'lich-test-run)
;;; lsp_mode_scenario.el ends here

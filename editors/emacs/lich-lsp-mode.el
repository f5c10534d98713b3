;;; lich-lsp-mode.el --- lich-lsp (a coding agent in the language server) for lsp-mode  -*- lexical-binding: t; -*-

;; Version: 0.1
;; Package-Requires: ((emacs "27.1") (lsp-mode "8.0"))
;; Keywords: tools, languages

;;; Commentary:

;; Registers lich-lsp as an lsp-mode add-on client (`:add-on? t'), so it runs next to the
;; buffer's usual language server.  The editor half of lich's LSP surface:
;;  - declares `experimental.lich.saveDocuments' and saves exactly the buffers named in
;;    `lich/saveDocuments' (no prompts);
;;  - renders `lich/event' notifications in the *lich transcript* buffer;
;;  - asks for the prompt when the "Ask agent…" code action runs `lich.ask' without one;
;;  - commands sent to the lich workspace only (never broadcast): `lich-lsp-mode-ask',
;;    `lich-lsp-mode-cancel', `lich-lsp-mode-apply-patch', `lich-lsp-mode-status',
;;    `lich-lsp-mode-trust-workspace', `lich-lsp-mode-transcript'.
;;
;; Setup:
;;   (add-to-list 'load-path "/path/to/lich-lsp/editors/emacs")
;;   (with-eval-after-load 'lsp-mode (require 'lich-lsp-mode))
;;   ;; then M-x lsp in a project buffer (lich attaches to every file mode by default)

;;; Code:

(require 'cl-lib)
(require 'json)
(require 'lsp-mode)
(require 'subr-x)

(defgroup lich-lsp-mode nil
  "lich-lsp through lsp-mode."
  :group 'lsp-mode
  :prefix "lich-lsp-mode-")

(defcustom lich-lsp-mode-command '("lich-lsp")
  "Command line that starts lich-lsp (stdio)."
  :type '(repeat string))

(defcustom lich-lsp-mode-major-modes nil
  "Major modes lich attaches to; nil means every file buffer in a project."
  :type '(repeat symbol))

(defcustom lich-lsp-mode-initialization-options nil
  "Plist sent as LSP initializationOptions, or nil.
Same keys as .lich/config.json."
  :type 'sexp)

(defcustom lich-lsp-mode-transcript-buffer "*lich transcript*"
  "Name of the buffer that shows `lich/event' notifications."
  :type 'string)

(defvar lich-lsp-mode-ask-history nil)

(defun lich-lsp-mode--get (object key)
  "KEY (a string) of OBJECT.
OBJECT is a hash table (lsp-mode's default) or a plist (`lsp-use-plists')."
  (cond ((hash-table-p object) (gethash key object))
        ((listp object) (plist-get object (intern (concat ":" key))))))

;;;; Server requests and notifications

(defun lich-lsp-mode--save-uri (uri)
  "Save the buffer visiting URI without prompting; return nil or a reason string."
  (let* ((file (lsp--uri-to-path uri))
         (buffer (find-buffer-visiting file)))
    (if (not buffer)
        "not_open"
      (with-current-buffer buffer
        (condition-case err
            ;; Asked right after lich's own applied edit: the buffer is the truth.
            (cl-letf (((symbol-function 'yes-or-no-p) (lambda (&rest _) t))
                      ((symbol-function 'y-or-n-p) (lambda (&rest _) t))
                      ((symbol-function 'ask-user-about-supersession-threat) #'ignore))
              (let ((inhibit-message t))
                (when (or (buffer-modified-p) (not (file-exists-p file)))
                  (make-directory (file-name-directory file) t)
                  (basic-save-buffer)))
              nil)
          (error (error-message-string err)))))))

(defun lich-lsp-mode--save-documents (_workspace params)
  (let (saved failed)
    (mapc (lambda (uri)
            (let ((reason (lich-lsp-mode--save-uri uri)))
              (if reason
                  (push (list :uri uri :reason reason) failed)
                (push uri saved))))
          (lich-lsp-mode--get params "uris"))
    (list :saved (vconcat (nreverse saved)) :failed (vconcat (nreverse failed)))))

(defun lich-lsp-mode--transcript-insert (text &optional stream)
  (with-current-buffer (get-buffer-create lich-lsp-mode-transcript-buffer)
    (let ((inhibit-read-only t))
      (goto-char (point-max))
      (unless (or stream (bobp) (bolp)) (insert "\n"))
      (insert text)
      (unless stream (insert "\n")))
    (setq buffer-read-only t)))

(defun lich-lsp-mode--one-line (value)
  (let ((text (if (stringp value) value (format "%s" (json-encode value)))))
    (truncate-string-to-width (replace-regexp-in-string "[ \t\n]+" " " text) 160 nil nil "…")))

(defun lich-lsp-mode--retry-notice (data)
  "The transcript line for `llm_retry' DATA (a model attempt failed).
Text the failed attempt streamed stays in the buffer, so the line
says where the restarted answer begins."
  (let* ((delay (lich-lsp-mode--get data "delay_s"))
         (attempt (lich-lsp-mode--get data "attempt"))
         (max (lich-lsp-mode--get data "max_attempts"))
         (discarded (lich-lsp-mode--get data "discarded_chars"))
         (next (if (equal (lich-lsp-mode--get data "action") "failover")
                   (format "failing over to %s"
                           (or (lich-lsp-mode--get data "next_provider") "the next provider"))
                 (concat "retrying"
                         (if (and (numberp delay) (> delay 0)) (format " in %.1f s" delay) "")
                         (if (and (numberp attempt) (numberp max))
                             (format " (attempt %d of %d)" (1+ attempt) max)
                           "")))))
    (format "… provider %s failed (%s): %s%s"
            (or (lich-lsp-mode--get data "provider") "?") (or (lich-lsp-mode--get data "kind") "error")
            next (if (and (numberp discarded) (> discarded 0)) "; the answer restarts below" ""))))

(defun lich-lsp-mode--event (_workspace event)
  (ignore-errors
    (let ((type (lich-lsp-mode--get event "type"))
          (data (lich-lsp-mode--get event "data")))
      (pcase type
        ("text_delta" (lich-lsp-mode--transcript-insert (or (lich-lsp-mode--get data "text") "") t))
        ("run_start" (lich-lsp-mode--transcript-insert
                      (format "▶ %s" (or (lich-lsp-mode--get event "task_id") "task"))))
        ("tool_call_start"
         (lich-lsp-mode--transcript-insert
          (format "→ %s %s" (lich-lsp-mode--get data "name")
                  (lich-lsp-mode--one-line (or (lich-lsp-mode--get data "arguments") "")))))
        ("tool_call_end"
         (let ((ok (eq (lich-lsp-mode--get data "ok") t)))
           (lich-lsp-mode--transcript-insert
            (format "← %s %s: %s" (lich-lsp-mode--get data "name") (if ok "ok" "failed")
                    (lich-lsp-mode--one-line
                     (or (lich-lsp-mode--get data (if ok "summary" "error")) ""))))))
        ("llm_retry" (lich-lsp-mode--transcript-insert (lich-lsp-mode--retry-notice data)))
        ("run_end" (lich-lsp-mode--transcript-insert
                    (format "■ %s" (or (lich-lsp-mode--get data "stopped_reason") ""))))
        ("error" (lich-lsp-mode--transcript-insert
                  (format "! %s" (or (lich-lsp-mode--get data "message") ""))))))))

;;;; Commands (sent to the lich workspace only)

(defun lich-lsp-mode--workspace ()
  (or (lsp-find-workspace 'lich (buffer-file-name))
      (lsp-find-workspace 'lich nil)
      (user-error "lich: lich-lsp is not running here (M-x lsp)")))

(defun lich-lsp-mode-execute (command args)
  "Run lich COMMAND with the object ARGS (a plist); return the result.
Synchronous: use `lich-lsp-mode-execute-async' for agent tasks."
  (with-lsp-workspace (lich-lsp-mode--workspace)
    (lsp-request "workspace/executeCommand"
                 (list :command command :arguments (vector (or args (make-hash-table)))))))

(defun lich-lsp-mode-execute-async (command args &optional on-done)
  "Run lich COMMAND with ARGS without blocking; call ON-DONE with the result."
  (with-lsp-workspace (lich-lsp-mode--workspace)
    (lsp-request-async "workspace/executeCommand"
                       (list :command command :arguments (vector (or args (make-hash-table))))
                       (lambda (result) (when on-done (funcall on-done result)))
                       :mode 'detached
                       :error-handler (lambda (err) (message "lich: %s failed: %s" command err)))))

(defun lich-lsp-mode--report-ask (result)
  (let ((final (lich-lsp-mode--get result "final")))
    (message "lich: %s%s" (or (lich-lsp-mode--get result "stopped_reason") "done")
             (if (and final (not (string-empty-p final))) (concat ": " final) ""))))

(defun lich-lsp-mode-ask (prompt)
  "Ask the agent PROMPT about this file (and the active region)."
  (interactive (list (read-string "Ask agent: " nil 'lich-lsp-mode-ask-history)))
  (let ((args (list :prompt prompt)))
    (when buffer-file-name
      (setq args (plist-put args :uri (lsp--path-to-uri buffer-file-name)))
      (when (use-region-p)
        (setq args (plist-put args :range (lsp--region-to-range (region-beginning) (region-end))))))
    (lich-lsp-mode-execute-async "lich.ask" args #'lich-lsp-mode--report-ask)))

(defun lich-lsp-mode--ask-action (action)
  "Run the \"Ask agent…\" code action ACTION (a lich.ask Command).
Asks for the prompt when the action carries none."
  (let* ((arguments (lich-lsp-mode--get action "arguments"))
         (object (and (vectorp arguments) (> (length arguments) 0) (aref arguments 0)))
         (args (list :uri (lich-lsp-mode--get object "uri")
                     :range (lich-lsp-mode--get object "range")
                     :prompt (or (lich-lsp-mode--get object "prompt")
                                 (read-string "Ask agent: " nil 'lich-lsp-mode-ask-history)))))
    (lich-lsp-mode-execute-async "lich.ask" (cl-loop for (k v) on args by #'cddr
                                                     when v append (list k v))
                                 #'lich-lsp-mode--report-ask)))

(defun lich-lsp-mode-cancel ()
  "Cancel every running lich task."
  (interactive)
  (message "lich: cancelled %s" (lich-lsp-mode--get (lich-lsp-mode-execute "lich.cancel" nil) "cancelled")))

(defun lich-lsp-mode-apply-patch (beg end)
  "Apply the hashline patch in the region (or the whole buffer) through lich-lsp."
  (interactive (if (use-region-p) (list (region-beginning) (region-end)) (list (point-min) (point-max))))
  (let ((result (lich-lsp-mode-execute "lich.applyPatch"
                                       (list :patch (buffer-substring-no-properties beg end)))))
    (message "lich: %s" (if (eq (lich-lsp-mode--get result "ok") t)
                            (lich-lsp-mode--get result "output")
                          (lich-lsp-mode--get result "error")))
    result))

(defun lich-lsp-mode-status ()
  "Show lich-lsp's status."
  (interactive)
  (let ((result (lich-lsp-mode-execute "lich.status" nil)))
    (message "lich: %s" (json-encode result))
    result))

(defun lich-lsp-mode--trust-text (result)
  "The line to show for a `lich.trustWorkspace' RESULT: the server's message.
The state is added when the message does not name it."
  (let* ((state (format "%s" (or (lich-lsp-mode--get result "state") "unknown")))
         (text (string-trim (or (lich-lsp-mode--get result "message") "")))
         (text (replace-regexp-in-string "\\`lich:[ \t]*" "" text)))
    (cond
     ((string-empty-p text)
      (format "workspace config %s is %s" (or (lich-lsp-mode--get result "config") "") state))
     ((string-match-p (regexp-quote (downcase state)) (downcase text)) text)
     (t (format "%s (%s)" text state)))))

(defun lich-lsp-mode-trust-workspace (&optional revoke)
  "Trust this workspace's .lich/config.json; with prefix arg REVOKE, revoke it.
Until trusted, the file's keys that load code, run programs or send
data (plugins, providers, MCP servers, test commands) are ignored.
Shows the server's answer and returns the result; its state
\"refused\" means initializationOptions say `workspace_trust' \"never\"."
  (interactive "P")
  (let ((result (lich-lsp-mode-execute "lich.trustWorkspace" (and revoke (list :revoke t)))))
    (message "lich: %s" (lich-lsp-mode--trust-text result))
    result))

(defun lich-lsp-mode-transcript ()
  "Show the transcript of lich tasks."
  (interactive)
  (pop-to-buffer (get-buffer-create lich-lsp-mode-transcript-buffer)))

;;;; Registration

(lsp-register-client
 (make-lsp-client
  :new-connection (lsp-stdio-connection (lambda () lich-lsp-mode-command))
  :activation-fn (lambda (_file-name mode)
                   (or (null lich-lsp-mode-major-modes) (memq mode lich-lsp-mode-major-modes)))
  :add-on? t
  :priority -2
  :server-id 'lich
  :custom-capabilities '((experimental . ((lich . ((saveDocuments . t))))))
  :initialization-options (lambda () lich-lsp-mode-initialization-options)
  :request-handlers (let ((table (make-hash-table :test 'equal)))
                      (puthash "lich/saveDocuments" #'lich-lsp-mode--save-documents table)
                      table)
  :notification-handlers (let ((table (make-hash-table :test 'equal)))
                           (puthash "lich/event" #'lich-lsp-mode--event table)
                           table)
  :action-handlers (let ((table (make-hash-table :test 'equal)))
                     (puthash "lich.ask" #'lich-lsp-mode--ask-action table)
                     table)))

(provide 'lich-lsp-mode)
;;; lich-lsp-mode.el ends here

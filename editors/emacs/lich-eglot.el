;;; lich-eglot.el --- lich-lsp (a coding agent in the language server) for Eglot  -*- lexical-binding: t; -*-

;; Version: 0.1
;; Package-Requires: ((emacs "27.1") (eglot "1.9"))
;; Keywords: tools, languages

;;; Commentary:

;; Eglot talks to lich-lsp through the server class `lich-eglot-server', which adds the editor
;; half of lich's LSP surface:
;;  - declares `experimental.lich.saveDocuments' and saves exactly the buffers the server names
;;    in `lich/saveDocuments' (no prompts), so disk matches the agent's edits;
;;  - renders `lich/event' notifications in the *lich transcript* buffer;
;;  - shows `$/progress' in the echo area;
;;  - asks for the prompt when the "Ask agent…" code action runs `lich.ask' without one;
;;  - commands that talk to the lich server only: `lich-eglot-ask', `lich-eglot-cancel',
;;    `lich-eglot-apply-patch', `lich-eglot-status', `lich-eglot-trust-workspace',
;;    `lich-eglot-transcript'.
;;
;; Setup (see README.md next to this file):
;;   (add-to-list 'load-path "/path/to/lich-lsp/editors/emacs")
;;   (require 'lich-eglot)
;;   (lich-eglot-register '(python-mode js-mode))   ; modes whose files lich manages
;;
;; Eglot manages a buffer with one server at a time; `M-x lich-eglot-start' starts lich for the
;; current buffer whatever its mode.

;;; Code:

(require 'cl-lib)
(require 'eglot)
(require 'jsonrpc)
(require 'subr-x)

(defgroup lich-eglot nil
  "lich-lsp through Eglot."
  :group 'eglot
  :prefix "lich-eglot-")

(defcustom lich-eglot-command '("lich-lsp")
  "Command line that starts lich-lsp (stdio).
For a project's own Python use e.g.
  (\"/path/to/venv/bin/python\" \"-m\" \"lich_lsp\")."
  :type '(repeat string))

(defcustom lich-eglot-initialization-options nil
  "Plist sent as LSP initializationOptions (the keys of .lich/config.json), or nil."
  :type '(choice (const nil) plist))

(defcustom lich-eglot-transcript-buffer "*lich transcript*"
  "Name of the buffer that shows `lich/event' notifications."
  :type 'string)

(defclass lich-eglot-server (eglot-lsp-server) ()
  :documentation "Eglot server class for lich-lsp.")

;;;; Capabilities and initialization

(cl-defmethod eglot-client-capabilities ((server lich-eglot-server))
  (let ((caps (copy-sequence (cl-call-next-method server))))
    (setq caps (plist-put caps :experimental '(:lich (:saveDocuments t))))
    ;; Eglot 1.9 answers window/showMessageRequest (approvals, quick prompts) but does not say
    ;; so; without it the server would fall back to denying tools that need approval.
    (plist-put caps :window '(:workDoneProgress t
                              :showMessage (:messageActionItem (:additionalPropertiesSupport :json-false))))))

(cl-defmethod eglot-initialization-options ((server lich-eglot-server))
  (or lich-eglot-initialization-options (cl-call-next-method server)))

;;;; Server requests and notifications

(defun lich-eglot--save-uri (uri)
  "Save the buffer visiting URI without prompting; return nil or a reason string."
  (let* ((file (eglot--uri-to-path uri))
         (buffer (find-buffer-visiting file)))
    (cond
     ((not buffer) "not_open")
     (t
      (with-current-buffer buffer
        (condition-case err
            ;; The server asks right after its own applied edit: the buffer is the truth, so
            ;; answer the "changed on disk" questions with yes instead of blocking on them.
            (cl-letf (((symbol-function 'yes-or-no-p) (lambda (&rest _) t))
                      ((symbol-function 'y-or-n-p) (lambda (&rest _) t))
                      ((symbol-function 'ask-user-about-supersession-threat) #'ignore))
              (let ((inhibit-message t))
                (when (or (buffer-modified-p) (not (file-exists-p file)))
                  (make-directory (file-name-directory file) t)
                  (basic-save-buffer)))
              nil)
          (error (error-message-string err))))))))

(cl-defmethod eglot-handle-request
  ((_server lich-eglot-server) (_method (eql lich/saveDocuments)) &key uris &allow-other-keys)
  "Save exactly the buffers of URIS, so disk matches the agent's edits."
  (let (saved failed)
    (mapc (lambda (uri)
            (let ((reason (lich-eglot--save-uri uri)))
              (if reason
                  (push (list :uri uri :reason reason) failed)
                (push uri saved))))
          uris)
    (list :saved (vconcat (nreverse saved)) :failed (vconcat (nreverse failed)))))

(cl-defmethod eglot-handle-request
  ((_server lich-eglot-server) (_method (eql window/workDoneProgress/create)) &rest _)
  "Accept the progress token; `$/progress' notifications follow."
  nil)

(defvar lich-eglot--progress-title nil
  "Title of the progress that began last (reports carry only a message).")

(cl-defmethod eglot-handle-notification
  ((_server lich-eglot-server) (_method (eql $/progress)) &key _token value &allow-other-keys)
  (let ((title (plist-get value :title))
        (message (plist-get value :message))
        (kind (plist-get value :kind)))
    (when (equal kind "begin") (setq lich-eglot--progress-title title))
    (let ((inhibit-message nil))
      (message "%s%s%s" (or title lich-eglot--progress-title "lich")
               (if message (concat ": " message) "")
               (if (equal kind "end") " (done)" "")))))

(defun lich-eglot--one-line (value)
  (let ((text (if (stringp value) value (json-encode value))))
    (truncate-string-to-width (replace-regexp-in-string "[ \t\n]+" " " text) 160 nil nil "…")))

(defvar lich-eglot--streaming nil
  "Non-nil while the transcript's last line holds streamed assistant text.")

(defun lich-eglot--transcript-insert (text &optional stream)
  (with-current-buffer (get-buffer-create lich-eglot-transcript-buffer)
    (let ((inhibit-read-only t))
      (goto-char (point-max))
      (unless (or stream (bobp) (bolp)) (insert "\n"))
      (when (and stream (not lich-eglot--streaming) (not (bobp)) (not (bolp))) (insert "\n"))
      (insert text)
      (unless stream (insert "\n"))
      (setq lich-eglot--streaming stream))
    (setq buffer-read-only t)))

(defun lich-eglot--retry-notice (data)
  "The transcript line for `llm_retry' DATA (a model attempt failed).
Text the failed attempt streamed stays in the buffer, so the line
says where the restarted answer begins."
  (let* ((delay (plist-get data :delay_s))
         (attempt (plist-get data :attempt))
         (max (plist-get data :max_attempts))
         (discarded (plist-get data :discarded_chars))
         (next (if (equal (plist-get data :action) "failover")
                   (format "failing over to %s" (or (plist-get data :next_provider) "the next provider"))
                 (concat "retrying"
                         (if (and (numberp delay) (> delay 0)) (format " in %.1f s" delay) "")
                         (if (and (numberp attempt) (numberp max))
                             (format " (attempt %d of %d)" (1+ attempt) max)
                           "")))))
    (format "… provider %s failed (%s): %s%s"
            (or (plist-get data :provider) "?") (or (plist-get data :kind) "error") next
            (if (and (numberp discarded) (> discarded 0)) "; the answer restarts below" ""))))

(defun lich-eglot--render-event (event)
  "Render one lich/event plist (the agent core's event with `:task_id')."
  (let* ((type (plist-get event :type))
         (data (plist-get event :data)))
    (pcase type
      ("text_delta" (lich-eglot--transcript-insert (or (plist-get data :text) "") t))
      ("run_start" (lich-eglot--transcript-insert (format "▶ %s" (or (plist-get event :task_id) "task"))))
      ("tool_call_start"
       (lich-eglot--transcript-insert
        (format "→ %s %s" (plist-get data :name) (lich-eglot--one-line (or (plist-get data :arguments) "")))))
      ("tool_call_end"
       (lich-eglot--transcript-insert
        (if (eq (plist-get data :ok) t)
            (format "← %s ok: %s" (plist-get data :name) (lich-eglot--one-line (or (plist-get data :summary) "")))
          (format "← %s failed: %s" (plist-get data :name) (lich-eglot--one-line (or (plist-get data :error) ""))))))
      ("llm_retry" (lich-eglot--transcript-insert (lich-eglot--retry-notice data)))
      ("run_end" (lich-eglot--transcript-insert (format "■ %s" (or (plist-get data :stopped_reason) ""))))
      ("error" (lich-eglot--transcript-insert (format "! %s" (or (plist-get data :message) ""))))
      (_ nil))))

(cl-defmethod eglot-handle-notification
  ((_server lich-eglot-server) (_method (eql lich/event)) &rest event)
  (ignore-errors (lich-eglot--render-event event)))

;;;; Commands (sent to the lich server only)

(defun lich-eglot--server ()
  "The lich server managing this buffer, else any running lich server."
  (let ((current (eglot-current-server)))
    (if (and current (object-of-class-p current 'lich-eglot-server))
        current
      (or (cl-find-if (lambda (s) (object-of-class-p s 'lich-eglot-server))
                      (apply #'append (hash-table-values eglot--servers-by-project)))
          (user-error "lich: no lich server is running (M-x lich-eglot-start)")))))

(defun lich-eglot-execute (command args)
  "Run lich COMMAND with the object ARGS (a plist); return the result.
Synchronous: use `lich-eglot-execute-async' for agent tasks."
  (jsonrpc-request (lich-eglot--server) :workspace/executeCommand
                   (list :command command :arguments (vector (or args eglot--{})))))

(defun lich-eglot-execute-async (command args &optional on-done)
  "Run lich COMMAND with ARGS without blocking; call ON-DONE with the result."
  (jsonrpc-async-request
   (lich-eglot--server) :workspace/executeCommand
   (list :command command :arguments (vector (or args eglot--{})))
   :success-fn (lambda (result) (when on-done (funcall on-done result)))
   :error-fn (lambda (err) (message "lich: %s failed: %s" command (plist-get err :message)))
   :timeout-fn #'ignore
   ;; Agent tasks run for minutes: no client-side timeout.
   :timeout most-positive-fixnum))

(defun lich-eglot--report-ask (result)
  (message "lich: %s%s" (or (plist-get result :stopped_reason) "done")
           (let ((final (plist-get result :final)))
             (if (and final (not (string-empty-p final))) (concat ": " final) ""))))

(defun lich-eglot--region-range ()
  (when (use-region-p)
    (list :start (eglot--pos-to-lsp-position (region-beginning))
          :end (eglot--pos-to-lsp-position (region-end)))))

(defvar lich-eglot-ask-history nil)

(defun lich-eglot-ask (prompt)
  "Ask the agent PROMPT about this file (and the active region)."
  (interactive (list (read-string "Ask agent: " nil 'lich-eglot-ask-history)))
  (let ((args (list :prompt prompt)))
    (when buffer-file-name
      (setq args (plist-put args :uri (eglot--path-to-uri buffer-file-name)))
      (let ((range (lich-eglot--region-range)))
        (when range (setq args (plist-put args :range range)))))
    (lich-eglot-execute-async "lich.ask" args #'lich-eglot--report-ask)))

;; The "Ask agent…" code action carries lich.ask without a prompt: ask for one here, and run
;; the task asynchronously (Eglot's default executeCommand would block Emacs until it ends).
(cl-defmethod eglot-execute-command ((_server lich-eglot-server) (_command (eql lich.ask)) arguments)
  (let* ((args (if (and (vectorp arguments) (> (length arguments) 0)) (aref arguments 0) nil))
         (args (if (listp args) (copy-sequence args) nil)))
    (unless (plist-get args :prompt)
      (setq args (plist-put args :prompt (read-string "Ask agent: " nil 'lich-eglot-ask-history))))
    (lich-eglot-execute-async "lich.ask" args #'lich-eglot--report-ask)))

(defun lich-eglot-cancel (&optional task-id)
  "Cancel the task TASK-ID, or every running lich task."
  (interactive)
  (let ((result (lich-eglot-execute "lich.cancel" (and task-id (list :task_id task-id)))))
    (message "lich: cancelled %s" (plist-get result :cancelled))
    result))

(defun lich-eglot-apply-patch (beg end)
  "Apply the hashline patch in the region (or the whole buffer) through lich-lsp."
  (interactive (if (use-region-p) (list (region-beginning) (region-end)) (list (point-min) (point-max))))
  (let ((result (lich-eglot-execute "lich.applyPatch"
                                    (list :patch (buffer-substring-no-properties beg end)))))
    (message "lich: %s" (if (eq (plist-get result :ok) t)
                            (plist-get result :output)
                          (or (plist-get result :error) result)))
    result))

(defun lich-eglot-status ()
  "Show lich-lsp's status."
  (interactive)
  (let ((result (lich-eglot-execute "lich.status" nil)))
    (message "lich: %s" (json-encode result))
    result))

(defun lich-eglot--trust-text (result)
  "The line to show for a `lich.trustWorkspace' RESULT: the server's message.
The state is added when the message does not name it."
  (let* ((state (format "%s" (or (plist-get result :state) "unknown")))
         (text (string-trim (or (plist-get result :message) "")))
         (text (replace-regexp-in-string "\\`lich:[ \t]*" "" text)))
    (cond
     ((string-empty-p text)
      (format "workspace config %s is %s" (or (plist-get result :config) "") state))
     ((string-match-p (regexp-quote (downcase state)) (downcase text)) text)
     (t (format "%s (%s)" text state)))))

(defun lich-eglot-trust-workspace (&optional revoke)
  "Trust this workspace's .lich/config.json; with prefix arg REVOKE, revoke it.
Until trusted, the file's keys that load code, run programs or send
data (plugins, providers, MCP servers, test commands) are ignored.
Trust covers that exact content; the server records it in the user
state dir.  Shows the server's answer and returns the result plist
\(:state :config :keys :message); :state \"refused\" means
initializationOptions say `workspace_trust' \"never\"."
  (interactive "P")
  (let ((result (lich-eglot-execute "lich.trustWorkspace" (and revoke (list :revoke t)))))
    (message "lich: %s" (lich-eglot--trust-text result))
    result))

(defun lich-eglot-transcript ()
  "Show the transcript of lich tasks."
  (interactive)
  (pop-to-buffer (get-buffer-create lich-eglot-transcript-buffer)))

;;;; Starting

(defun lich-eglot-register (modes)
  "Let Eglot start lich-lsp for buffers in MODES (a list of major modes)."
  (add-to-list 'eglot-server-programs (cons modes (cons 'lich-eglot-server lich-eglot-command))))

(defun lich-eglot-start ()
  "Start lich-lsp for the current buffer's project, whatever its major mode."
  (interactive)
  (let ((mode major-mode))
    (eglot (list mode) (or (project-current) (cons 'transient default-directory))
           'lich-eglot-server lich-eglot-command
           (string-remove-suffix "-mode" (symbol-name mode)) t)))

(provide 'lich-eglot)
;;; lich-eglot.el ends here

;;; lich.el --- lich-lsp (a coding agent in the language server): shared editor half  -*- lexical-binding: t; -*-

;; Version: 0.2
;; Package-Requires: ((emacs "27.1"))
;; Keywords: tools, languages

;;; Commentary:

;; The editor half of lich's LSP surface, for any Emacs LSP client.  This file needs neither
;; Eglot nor lsp-mode: `lich-eglot.el' and `lich-lsp-mode.el' are thin adapters that
;; `(require 'lich)', register a `lich-adapter' (how to reach the lich server through their
;; client, with that client's public API only) and route the server's messages here:
;;  - `lich-handle-event': `lich/event' notifications rendered in the *lich transcript* buffer;
;;  - `lich-save-documents': the `lich/saveDocuments' request, saving exactly the named buffers
;;    (no prompts) so disk matches the agent's edits;
;;  - `lich-run-ask-command': the "Ask agent…" code action (`lich.ask' without a prompt asks
;;    for one), run asynchronously;
;;  - `lich-show-progress': `$/progress' values in the echo area.
;; The commands `lich-ask', `lich-cancel', `lich-apply-patch', `lich-status',
;; `lich-trust-workspace', `lich-run-tests' and `lich-transcript' talk to the lich server only (never to the
;; buffer's other language servers): the one of the current buffer, else any running one.
;; The adapters' `lich-eglot-*' and `lich-lsp-mode-*' commands are aliases of these.
;; `M-x lich-chat' (lich-chat.el, autoloaded) is a conversation on the server's threads; it
;; gets the events through `lich-event-functions' and hears of a server (re)start through
;; `lich-connect-functions' (the adapters call `lich-handle-connect').
;;
;; Setup: put this directory on the load path and require one adapter (see README.md):
;;   (add-to-list 'load-path "/path/to/lich-lsp/editors/emacs")
;;   (require 'lich-eglot)                                   ; or
;;   (with-eval-after-load 'lsp-mode (require 'lich-lsp-mode))

;;; Code:

(require 'cl-lib)
(require 'json)
(require 'subr-x)
(require 'url-parse)
(require 'url-util)

(defgroup lich nil
  "lich-lsp, a coding agent in the language server."
  :group 'tools
  :prefix "lich-")

(defcustom lich-transcript-buffer "*lich transcript*"
  "Name of the buffer that shows `lich/event' notifications."
  :type 'string)

(defvar lich-ask-history nil "Prompts given to `lich-ask'.")

;;;; Adapters

(cl-defstruct (lich-adapter (:constructor lich-adapter-create) (:copier nil))
  "How lich reaches its server through one LSP client.
NAME is a symbol.  CONNECTION is a function of one argument ANYWHERE:
with nil it returns the lich connection that manages the
current buffer, with non-nil any running lich connection, else
nil.  REQUEST is (CONN METHOD PARAMS) -> result, synchronous.
ASYNC-REQUEST is (CONN METHOD PARAMS ON-SUCCESS ON-ERROR), each
callback called with one argument.  DOCUMENT-URI is a function of
no arguments: the URI the client uses for the current buffer's
file.  POSITION is (POS) -> the LSP position of POS in the current
buffer.  START-HINT says how to start lich with this client."
  name connection request async-request document-uri position start-hint)

(defvar lich-adapters nil
  "The registered `lich-adapter's, most recently registered first.")

(defun lich-register-adapter (adapter)
  "Register ADAPTER (a `lich-adapter'), replacing one of the same name."
  (setq lich-adapters
        (cons adapter (cl-remove (lich-adapter-name adapter) lich-adapters
                                 :key #'lich-adapter-name)))
  adapter)

(defun lich--connection ()
  "The lich connection to use, as (ADAPTER . CONNECTION).
The one managing the current buffer, else any running one."
  (or (cl-loop for adapter in lich-adapters
               for conn = (funcall (lich-adapter-connection adapter) nil)
               when conn return (cons adapter conn))
      (cl-loop for adapter in lich-adapters
               for conn = (funcall (lich-adapter-connection adapter) t)
               when conn return (cons adapter conn))
      (user-error "lich: no lich server is running (%s)"
                  (if lich-adapters
                      (mapconcat #'lich-adapter-start-hint (reverse lich-adapters) " or ")
                    "require lich-eglot or lich-lsp-mode first"))))

(defun lich--request (method params)
  "Send METHOD with PARAMS to the lich server and wait for the result."
  (let ((target (lich--connection)))
    (funcall (lich-adapter-request (car target)) (cdr target) method params)))

(defun lich--request-async (method params on-success on-error)
  "Send METHOD with PARAMS to the lich server.
Later call ON-SUCCESS with the result or ON-ERROR with the error."
  (let ((target (lich--connection)))
    (funcall (lich-adapter-async-request (car target)) (cdr target) method params
             on-success on-error)))

;;;; JSON values

(defun lich-json-get (object key)
  "KEY (a string) of the JSON object OBJECT.
OBJECT is a plist with keyword keys (Eglot, `lsp-use-plists') or a
hash table with string keys (lsp-mode's default)."
  (cond ((hash-table-p object) (gethash key object))
        ((and object (listp object)) (plist-get object (intern (concat ":" key))))))

(defun lich--to-plist (object)
  "The JSON object OBJECT as a fresh plist with keyword keys (one level)."
  (cond ((hash-table-p object)
         (let (plist)
           (maphash (lambda (key value)
                      (setq plist (plist-put plist (intern (concat ":" (format "%s" key))) value)))
                    object)
           plist))
        ((listp object) (copy-sequence object))))

(defun lich--empty-object ()
  "A value every client sends as the JSON object {}."
  (make-hash-table :test #'equal))

(defun lich--error-text (err)
  "A short text for the request error ERR (a JSON-RPC error object)."
  (or (let ((message (ignore-errors (lich-json-get err "message"))))
        (and (stringp message) message))
      (format "%s" err)))

;;;; File URIs (for clients whose Emacs has no public conversion)

(defconst lich--uri-path-allowed-chars
  (let ((vec (copy-sequence url-path-allowed-chars)))
    (aset vec ?: nil)
    vec)
  "Characters left as they are in a file URI's path (not `:', like Eglot).")

(defun lich-path-to-uri (path)
  "The file:// URI of PATH (its true name; the local part of a remote PATH)."
  (let ((truepath (file-truename path)))
    (concat "file://"
            (if (and (eq system-type 'windows-nt) (not (file-remote-p truepath))) "/")
            (url-hexify-string (directory-file-name (file-local-name truepath))
                               lich--uri-path-allowed-chars))))

(defun lich-uri-to-path (uri)
  "The local file name of the file:// URI (a string or a keyword)."
  (when (keywordp uri) (setq uri (substring (symbol-name uri) 1)))
  (let ((path (decode-coding-string
               (url-unhex-string (url-filename (url-generic-parse-url uri))) 'utf-8)))
    (if (and (eq system-type 'windows-nt) (string-match-p "\\`/[A-Za-z]:" path))
        (substring path 1)
      path)))

;;;; Saving the documents lich edited (`lich/saveDocuments')

(defun lich--uri-buffer (uri uri-to-path)
  "The buffer visiting URI; URI-TO-PATH (or `lich-uri-to-path') names its file."
  (let ((file (funcall (or uri-to-path #'lich-uri-to-path) uri)))
    (or (find-buffer-visiting file)
        ;; A remote (TRAMP) buffer: the URI names only the local part of its file.
        (cl-find-if (lambda (buffer)
                      (let ((name (buffer-file-name buffer)))
                        (and name (file-remote-p name)
                             (equal (file-local-name name) file))))
                    (buffer-list)))))

(defun lich--save-buffer (buffer)
  "Save BUFFER without prompting; return nil, or the reason it failed."
  (with-current-buffer buffer
    (condition-case err
        ;; The server asks right after its own applied edit: the buffer is the truth, so
        ;; answer the "changed on disk" questions with yes instead of blocking on them.
        (cl-letf (((symbol-function 'yes-or-no-p) (lambda (&rest _) t))
                  ((symbol-function 'y-or-n-p) (lambda (&rest _) t))
                  ((symbol-function 'ask-user-about-supersession-threat) #'ignore))
          (let ((inhibit-message t)
                (file buffer-file-name))
            (when (or (buffer-modified-p) (not (file-exists-p file)))
              (make-directory (file-name-directory file) t)
              (basic-save-buffer)))
          nil)
      (error (error-message-string err)))))

(defun lich-save-documents (uris &optional uri-to-path)
  "Save exactly the buffers of URIS (a sequence), so disk matches the edits.
URI-TO-PATH converts a URI to a file name (default `lich-uri-to-path').
Returns the `lich/saveDocuments' result:
  (:saved [URI...] :failed [(:uri URI :reason TEXT)...])."
  (let (saved failed)
    (mapc (lambda (uri)
            (let* ((buffer (lich--uri-buffer uri uri-to-path))
                   (reason (if buffer (lich--save-buffer buffer) "not_open")))
              (if reason
                  (push (list :uri uri :reason reason) failed)
                (push uri saved))))
          uris)
    (list :saved (vconcat (nreverse saved)) :failed (vconcat (nreverse failed)))))

;;;; The transcript (`lich/event')

(defvar lich--streaming nil
  "Non-nil while the transcript's last line holds streamed assistant text.")

(defun lich--transcript-insert (text &optional stream)
  "Append TEXT to the transcript: a line of its own, or with STREAM glued on."
  (with-current-buffer (get-buffer-create lich-transcript-buffer)
    (let ((inhibit-read-only t))
      (goto-char (point-max))
      (unless (or stream (bobp) (bolp)) (insert "\n"))
      (when (and stream (not lich--streaming) (not (bobp)) (not (bolp))) (insert "\n"))
      (insert text)
      (unless stream (insert "\n")))
    (setq lich--streaming stream)
    (setq buffer-read-only t)
    (dolist (window (get-buffer-window-list (current-buffer) nil t))
      (set-window-point window (point-max)))))

(defun lich-transcript-log (text)
  "Append TEXT to the *lich transcript* buffer as a line of its own."
  (lich--transcript-insert text))

(defun lich--one-line (value)
  "VALUE (a string or JSON value) on one line of at most 160 characters."
  (let ((text (if (stringp value) value (json-encode value))))
    (truncate-string-to-width (replace-regexp-in-string "[ \t\n]+" " " text) 160 nil nil "…")))

(defun lich--retry-notice (data)
  "The transcript line for `llm_retry' DATA (a model attempt failed).
Text the failed attempt streamed stays in the buffer, so the line
says where the restarted answer begins."
  (let* ((delay (lich-json-get data "delay_s"))
         (attempt (lich-json-get data "attempt"))
         (max (lich-json-get data "max_attempts"))
         (discarded (lich-json-get data "discarded_chars"))
         (next (if (equal (lich-json-get data "action") "failover")
                   (format "failing over to %s"
                           (or (lich-json-get data "next_provider") "the next provider"))
                 (concat "retrying"
                         (if (and (numberp delay) (> delay 0)) (format " in %.1f s" delay) "")
                         (if (and (numberp attempt) (numberp max))
                             (format " (attempt %d of %d)" (1+ attempt) max)
                           "")))))
    (format "… provider %s failed (%s): %s%s"
            (or (lich-json-get data "provider") "?") (or (lich-json-get data "kind") "error") next
            (if (and (numberp discarded) (> discarded 0)) "; the answer restarts below" ""))))

(defvar lich--streamed-tasks (make-hash-table :test #'equal)
  "Tasks whose current answer was streamed: their `final' event repeats nothing.
Cleared by the task's `run_start' and `run_end', and by an `llm_retry'
that voids streamed text (a failover provider may not stream).")

(defun lich--event-task (event)
  "The task EVENT belongs to: the server's task_id, else the core's run_id."
  (or (lich-json-get event "task_id") (lich-json-get event "run_id") ""))

(defun lich--string (value)
  "VALUE when it is a non-empty string, else nil."
  (and (stringp value) (not (string-empty-p value)) value))

(defun lich--tokens (value)
  "VALUE (a token count) as text, \"?\" when absent."
  (if (numberp value) (format "%d" value) "?"))

(defun lich-render-event (event)
  "Render one `lich/event' payload EVENT in the transcript.
EVENT is the agent core's event (type, data, task_id, …) as a plist
or a hash table; see `lich-json-get'.  The fields read are those of
docs/lich-event.schema.json; an event too large to send whole keeps
only its short fields and says so in `data.cut'."
  (let ((type (lich-json-get event "type"))
        (data (lich-json-get event "data"))
        (task (lich--event-task event)))
    (pcase type
      ("text_delta"
       (let ((text (or (lich--string (lich-json-get data "text")) "")))
         (unless (string-empty-p text) (puthash task t lich--streamed-tasks))
         (lich--transcript-insert text t)))
      ("run_start"
       (remhash task lich--streamed-tasks)
       (let ((model (lich--string (lich-json-get data "model"))))
         (lich--transcript-insert
          (format "▶ %s%s" (or (lich--string (lich-json-get event "task_id")) "task")
                  (if model (format " (%s)" model) "")))))
      ("tool_call_start"
       (let ((args (lich-json-get data "arguments")))
         (lich--transcript-insert
          (format "→ %s%s" (or (lich-json-get data "name") "?")
                  (cond (args (concat " " (lich--one-line args)))
                        ;; Too large to send whole: the server kept the short fields only.
                        ((lich-json-get data "cut") " (arguments too large to show)")
                        (t ""))))))
      ("tool_call_end"
       (let ((ok (eq (lich-json-get data "ok") t)))
         (lich--transcript-insert
          (format "← %s %s: %s" (or (lich-json-get data "name") "?") (if ok "ok" "failed")
                  (lich--one-line (or (lich-json-get data (if ok "summary" "error")) ""))))))
      ("llm_retry"
       (let ((discarded (lich-json-get data "discarded_chars")))
         (when (and (numberp discarded) (> discarded 0))
           (remhash task lich--streamed-tasks)))
       (lich--transcript-insert (lich--retry-notice data)))
      ("final"
       ;; Shown unless the answer was streamed (a failover provider may not stream).
       (let ((text (lich--string (lich-json-get data "text"))))
         (when (and text (not (gethash task lich--streamed-tasks)))
           (lich--transcript-insert text))))
      ("compress_start"
       (let ((tokens (lich-json-get data "estimated_tokens")))
         (lich--transcript-insert
          (concat "… compressing the conversation"
                  (if (numberp tokens) (format " (~%d tokens)" tokens) "")))))
      ("compress_end"
       (lich--transcript-insert
        (if (eq (lich-json-get data "ok") t)
            (format "… compressed ~%s → ~%s tokens"
                    (lich--tokens (lich-json-get data "before_tokens"))
                    (lich--tokens (lich-json-get data "after_tokens")))
          (format "… compression skipped: %s"
                  (or (lich--string (lich-json-get data "error")) "?")))))
      ("budget_exhausted"
       (let* ((max (lich-json-get data "max_turns"))
              (skipped (lich-json-get data "skipped_calls"))
              (names (and (sequencep skipped) (not (stringp skipped))
                          (mapconcat (lambda (name) (format "%s" name)) skipped ", "))))
         (lich--transcript-insert
          (format "! turn budget exhausted (%s turns)%s" (if (numberp max) max "?")
                  (if (and names (not (string-empty-p names))) (concat ": skipped " names) "")))))
      ("plugin_warning"
       (lich--transcript-insert
        (format "! plugin warning: %s" (lich--one-line (or (lich-json-get data "message") "")))))
      ("run_end"
       (remhash task lich--streamed-tasks)
       (let ((problem (lich--string (lich-json-get data "error"))))
         (lich--transcript-insert
          (format "■ %s%s" (or (lich-json-get data "stopped_reason") "")
                  (if problem (concat ": " (lich--one-line problem)) "")))))
      ("error"
       (lich--transcript-insert
        (format "! %s" (lich--one-line (or (lich--string (lich-json-get data "message")) "error")))))
      ((or "llm_start" "llm_end" "turn_start" "turn_end")
       ;; Bookkeeping, not worth a line; it does end a streamed paragraph.
       (setq lich--streaming nil))
      (_ nil))))

(defvar lich-event-functions nil
  "Functions called with each `lich/event' payload after the transcript showed it.
`lich-chat' adds its handler here.  An error in one is shown, not raised.")

(defun lich-handle-event (event)
  "The `lich/event' notification handler: render EVENT, never signal."
  (ignore-errors (lich-render-event event))
  (dolist (function lich-event-functions)
    (condition-case err
        (funcall function event)
      (error (message "lich: %s failed on an event: %s" function (error-message-string err))))))

(defvar lich-connect-functions nil
  "Functions called with the connection each time a lich server has connected.
Also after a restart: the adapters call `lich-handle-connect' from
their client's public hooks.  `lich-chat' reloads its thread here.
An error in one is shown, not raised.")

(defun lich-handle-connect (connection)
  "A lich server's CONNECTION is up (started or restarted).
Runs `lich-connect-functions'."
  (dolist (function lich-connect-functions)
    (condition-case err
        (funcall function connection)
      (error (message "lich: %s failed after a connect: %s" function (error-message-string err))))))

;;;; The chat (lich-chat.el, loaded on first use)

(autoload 'lich-chat "lich-chat" "Show the chat with lich-lsp and move to the input." t)
(autoload 'lich-threads "lich-chat" "Pick one of the workspace's threads and show it in the chat." t)
(autoload 'lich-new-thread "lich-chat" "Empty the chat: the next message starts a new thread." t)
(autoload 'lich-rewind "lich-chat" "Rewind the chat's thread to before a turn." t)

;;;; Next edit suggestions (lich-next-edit.el, loaded on first use)

(autoload 'lich-next-edit-mode "lich-next-edit" "Show the lich server's next edit suggestions as you edit." t)

;;;; Progress (`$/progress')

(defvar lich--progress-title nil
  "Title of the progress that began last (reports carry only a message).")

(defun lich-show-progress (value)
  "Show the `$/progress' VALUE (work-done begin, report or end) in the echo area."
  (let ((title (lich-json-get value "title"))
        (message (lich-json-get value "message"))
        (kind (lich-json-get value "kind")))
    (when (equal kind "begin") (setq lich--progress-title title))
    (let ((inhibit-message nil))
      (message "%s%s%s" (or title lich--progress-title "lich")
               (if message (concat ": " message) "")
               (if (equal kind "end") " (done)" "")))))

;;;; Commands (sent to the lich server only)

(defun lich-execute (command args)
  "Run lich COMMAND with the object ARGS (a plist, nil for {}); return the result.
Synchronous: use `lich-execute-async' for agent tasks."
  (lich--request "workspace/executeCommand"
                 (list :command command :arguments (vector (or args (lich--empty-object))))))

(defun lich-execute-async (command args &optional on-done)
  "Run lich COMMAND with ARGS without blocking; call ON-DONE with the result."
  (lich--request-async "workspace/executeCommand"
                       (list :command command :arguments (vector (or args (lich--empty-object))))
                       (lambda (result) (when on-done (funcall on-done result)))
                       (lambda (err) (message "lich: %s failed: %s" command (lich--error-text err)))))

(defun lich--report-ask (result)
  (let ((final (lich-json-get result "final")))
    (message "lich: %s%s" (or (lich-json-get result "stopped_reason") "done")
             (if (and (stringp final) (not (string-empty-p final))) (concat ": " final) ""))))

(defun lich--read-prompt ()
  (read-string "Ask agent: " nil 'lich-ask-history))

(defun lich--ask (args)
  "Start the agent task `lich.ask' ARGS (a plist with :prompt)."
  (lich-transcript-log (format "» %s" (lich--one-line (plist-get args :prompt))))
  (lich-execute-async "lich.ask" args #'lich--report-ask))

(defun lich-ask (prompt)
  "Ask the agent PROMPT about this file (and the active region).
Runs asynchronously: the answer is shown when the task ends."
  (interactive (progn (lich--connection)  ; no server: say so before asking for the prompt
                      (list (lich--read-prompt))))
  (let* ((target (lich--connection))
         (adapter (car target))
         (args (list :prompt prompt)))
    (when buffer-file-name
      (setq args (plist-put args :uri (funcall (lich-adapter-document-uri adapter))))
      (when (use-region-p)
        (let ((position (lich-adapter-position adapter)))
          (setq args (plist-put args :range (list :start (funcall position (region-beginning))
                                                  :end (funcall position (region-end))))))))
    (lich--ask args)))

(defun lich-run-ask-command (arguments)
  "Run the `lich.ask' command of a code action with ARGUMENTS (its array).
The \"Ask agent…\" action carries no prompt: ask for one.  Runs
asynchronously (a client's default executeCommand would block
Emacs until the task ends)."
  (let* ((object (and (vectorp arguments) (> (length arguments) 0) (aref arguments 0)))
         (args (lich--to-plist object)))
    (unless (lich-json-get args "prompt")
      (setq args (plist-put args :prompt (lich--read-prompt))))
    (lich--ask args)))

(defun lich-cancel (&optional task-id)
  "Cancel the task TASK-ID, or every running lich task."
  (interactive)
  (let ((result (lich-execute "lich.cancel" (and task-id (list :task_id task-id)))))
    (message "lich: cancelled %s" (lich-json-get result "cancelled"))
    result))

(defun lich-apply-patch (beg end)
  "Apply the hashline patch between BEG and END through lich.
Interactively, the region or else the whole buffer."
  (interactive (if (use-region-p) (list (region-beginning) (region-end)) (list (point-min) (point-max))))
  (let ((result (lich-execute "lich.applyPatch"
                              (list :patch (buffer-substring-no-properties beg end)))))
    (message "lich: %s" (if (eq (lich-json-get result "ok") t)
                            (lich-json-get result "output")
                          (or (lich-json-get result "error") result)))
    result))

(defconst lich-mcp-error-chars 120
  "At most this many characters of an MCP server's last error in its status line.")

(defun lich--nonempty-string (value)
  "VALUE when it is a string with more than whitespace, else nil."
  (and (stringp value) (not (string-empty-p (string-trim value))) value))

(defun lich--json-object-p (value)
  "Whether VALUE is a JSON object as the clients read one.
That is a plist with keyword keys or a hash table."
  (or (hash-table-p value) (and (consp value) (keywordp (car value)))))

(defun lich--json-array (value)
  "The elements of VALUE when it is a JSON array.
That is a vector, or a list that is no plist."
  (cond ((vectorp value) (append value nil))
        ((and (consp value) (not (keywordp (car value))) (proper-list-p value)) value)))

(defun lich--without-key (object key)
  "A copy of the JSON OBJECT (plist or hash table) without KEY (a string)."
  (cond ((hash-table-p object)
         (let ((copy (copy-hash-table object))) (remhash key copy) copy))
        (t (let ((drop (intern (concat ":" key))) plist)
             (cl-loop for (name value) on object by #'cddr
                      unless (eq name drop) do (setq plist (nconc plist (list name value))))
             plist))))

(defun lich--mcp-line (server)
  "The status line of SERVER, an entry of `lich.status''s `mcp_servers'.
SERVER is {name, transport?, state, tools, last_error}: \"MCP files:
connected, 12 tools\", \"MCP web: failed: <last error, one line,
clipped>\", \"MCP x: not started\"."
  (let* ((state (or (lich--nonempty-string (lich-json-get server "state")) "unknown"))
         (name (or (lich--nonempty-string (lich-json-get server "name")) "?"))
         (tools (lich-json-get server "tools"))
         (last-error (lich--nonempty-string (lich-json-get server "last_error")))
         (text (format "MCP %s: %s" name (replace-regexp-in-string "_" " " state))))
    (cond ((equal state "connected")
           (if (numberp tools)
               (format "%s, %d %s" text tools (if (equal tools 1) "tool" "tools"))
             text))
          (last-error
           (format "%s: %s" text
                   (truncate-string-to-width
                    (string-trim (replace-regexp-in-string "[[:space:]\n\r\t]+" " " last-error))
                    lich-mcp-error-chars nil nil "…")))
          (t text))))

(defun lich--mcp-lines (servers)
  "One status line per MCP server of SERVERS (`lich.status''s `mcp_servers').
Nil when SERVERS is missing or no JSON array (an older server);
entries that are no JSON objects are left out."
  (delq nil (mapcar (lambda (server) (and (lich--json-object-p server) (lich--mcp-line server)))
                    (lich--json-array servers))))

(defun lich--status-text (result)
  "What `lich-status' shows for the `lich.status' RESULT.
The result as JSON, then one line per configured MCP server (which
then leaves the JSON)."
  (let ((mcp (lich--mcp-lines (lich-json-get result "mcp_servers"))))
    (mapconcat #'identity
               (cons (format "lich: %s" (json-encode (if mcp (lich--without-key result "mcp_servers") result)))
                     (mapcar (lambda (line) (concat "  " line)) mcp))
               "\n")))

(defun lich-status ()
  "Show lich-lsp's status, with one line per configured MCP server."
  (interactive)
  (let ((result (lich-execute "lich.status" nil)))
    (message "%s" (lich--status-text result))
    result))

(defun lich--trust-text (result)
  "The line to show for a `lich.trustWorkspace' RESULT: the server's message.
The state is added when the message does not name it."
  (let* ((state (format "%s" (or (lich-json-get result "state") "unknown")))
         (text (string-trim (or (lich-json-get result "message") "")))
         (text (replace-regexp-in-string "\\`lich:[ \t]*" "" text)))
    (cond
     ((string-empty-p text)
      (format "workspace config %s is %s" (or (lich-json-get result "config") "") state))
     ((string-match-p (regexp-quote (downcase state)) (downcase text)) text)
     (t (format "%s (%s)" text state)))))

(defun lich-trust-workspace (&optional revoke)
  "Trust this workspace's .lich/config.json; with prefix arg REVOKE, revoke it.
Until trusted, the file's keys that load code, run programs or send
data (plugins, providers, MCP servers, test commands) are ignored.
Trust covers that exact content; the server records it in the user
state dir.  Shows the server's answer and returns the result
\(state, config, keys, message); state \"refused\" means the
initializationOptions say `workspace_trust' \"never\"."
  (interactive "P")
  (let ((result (lich-execute "lich.trustWorkspace" (and revoke (list :revoke t)))))
    (message "lich: %s" (lich--trust-text result))
    result))

;;;; Tests (`lich.runTests')

(defvar lich-test-filter-history nil "Filters given to `lich-run-tests'.")

(defconst lich--max-failures-shown 3
  "How many failing tests `lich-run-tests' names in its message.")

(defun lich--count (value)
  "VALUE when it is a number, else 0."
  (if (numberp value) value 0))

(defun lich-test-summary (result)
  "The counts line of a `lich.runTests' RESULT.
The server's summary, else one made from the counts."
  (or (let ((summary (lich-json-get result "summary")))
        (and (stringp summary) (not (string-empty-p (string-trim summary))) (string-trim summary)))
      (let ((parts (delq nil (mapcar (lambda (key)
                                       (let ((n (lich--count (lich-json-get result key))))
                                         (and (> n 0)
                                              (format "%d %s" n (if (equal key "errors")
                                                                    (if (= n 1) "error" "errors")
                                                                  key)))))
                                     '("failed" "errors" "passed" "skipped")))))
        (if parts (mapconcat #'identity parts ", ") "no tests ran"))))

(defun lich--failure-text (failure directory)
  "One line for the failing test FAILURE (test_id, uri, 0-based line, message).
Its file is named relative to DIRECTORY."
  (let* ((uri (lich-json-get failure "uri"))
         (line (lich-json-get failure "line"))
         (file (if (and (stringp uri) (not (string-empty-p uri)))
                   (file-relative-name (lich-uri-to-path uri) directory)
                 "?")))
    (format "%s:%s %s: %s" file (if (numberp line) (1+ line) "?")
            (or (lich-json-get failure "test_id") "?")
            (lich--one-line (or (lich-json-get failure "message") "")))))

(defun lich-test-outcome (result &optional directory)
  "How to tell the user about the `lich.runTests' RESULT, as (LEVEL . TEXT).
LEVEL is `passed' (green), `failed' (some tests failed: they are
diagnostics too) or `error' (no run happened: no test command, a run
already going, ...).  Files are named relative to DIRECTORY."
  (let* ((summary (lich-test-summary result))
         (error-text (let ((e (lich-json-get result "error"))) (if (stringp e) (string-trim e) "")))
         (failures (let ((f (lich-json-get result "failures")))
                     (and (sequencep f) (not (stringp f)) (append f nil)))))
    (cond
     ((eq (lich-json-get result "ok") t)
      (cons 'passed (format "tests passed: %s" summary)))
     ((or (string-prefix-p "tests_failed" error-text)
          failures
          (and (string-empty-p error-text)
               (> (+ (lich--count (lich-json-get result "failed"))
                     (lich--count (lich-json-get result "errors")))
                  0)))
      (cons 'failed
            (concat (format "tests failed: %s" summary)
                    (and failures
                         (concat " — "
                                 (mapconcat (lambda (failure)
                                              (lich--failure-text failure (or directory default-directory)))
                                            (cl-subseq failures 0 (min (length failures) lich--max-failures-shown))
                                            "; ")
                                 (if (> (length failures) lich--max-failures-shown)
                                     (format " (+%d more)" (- (length failures) lich--max-failures-shown))
                                   ""))))))
     (t (cons 'error (format "running the tests failed: %s"
                             (if (string-empty-p error-text) summary error-text)))))))

(declare-function project-root "project" (project))

(defun lich--project-directory ()
  "The current project's root, else `default-directory'.
`lich-run-tests' names failing tests' files relative to it."
  (or (and (file-directory-p default-directory)
           (ignore-errors
             (require 'project)
             (let ((project (project-current)))
               (and project (fboundp 'project-root) (expand-file-name (project-root project))))))
      default-directory))

(defun lich-run-tests (&optional filter on-done)
  "Run the workspace's tests through lich (`lich.runTests').
The server first makes disk match the buffers, then runs the test
command (`test_command', else pytest in a Python project) with
FILTER appended when it is non-empty: interactively, with a prefix
argument, read from the minibuffer (e.g. tests/test_calc.py::test_add
or -k add).  Each failing test becomes an Error diagnostic (source
\"lich tests\") on its line, in Flymake or Flycheck like any other;
the next green run clears them.  Runs asynchronously: the outcome is
shown when the run ends, and ON-DONE (if given) is called with the
result, or nil when the request failed."
  (interactive (list (and current-prefix-arg
                          (read-string "Run tests matching: " nil 'lich-test-filter-history))))
  (let* ((filter (and (stringp filter) (string-trim filter)))
         (args (and filter (not (string-empty-p filter)) (list :filter filter)))
         (directory (lich--project-directory)))
    (message "lich: running the tests%s…" (if args (format " (%s)" filter) ""))
    (lich--request-async
     "workspace/executeCommand"
     (list :command "lich.runTests" :arguments (vector (or args (lich--empty-object))))
     (lambda (result)
       (let ((outcome (lich-test-outcome result directory)))
         (message "lich: %s" (cdr outcome)))
       (when on-done (funcall on-done result)))
     (lambda (err)
       (message "lich: running the tests failed: %s" (lich--error-text err))
       (when on-done (funcall on-done nil))))
    nil))

(defun lich-transcript ()
  "Show the transcript of lich tasks."
  (interactive)
  (pop-to-buffer (get-buffer-create lich-transcript-buffer)))

;;;; For the adapters

(defun lich-define-legacy-variable (old new)
  "Make the adapter variable OLD an obsolete alias of the shared NEW.
A value the user gave OLD before the adapter loaded is kept."
  (when (and (boundp old) (not (eq (symbol-value old) (symbol-value new))))
    (set new (symbol-value old)))
  (defvaralias old new)
  (make-obsolete-variable old new "0.2"))

(provide 'lich)
;;; lich.el ends here

;;; lich_shared.el --- editors/emacs/lich.el alone in batch ERT (no server, no LSP client)  -*- lexical-binding: t; -*-

;; Run by tests/editors/test_emacs.py:
;;   emacs --batch -L editors/emacs -l tests/editors/emacs/lich_shared.el \
;;         -f ert-run-tests-batch-and-exit
;; lich.el loads without Eglot or lsp-mode; it renders `lich/event' payloads (as Eglot's plists
;; and as lsp-mode's hash tables) into the *lich transcript* buffer, answers lich/saveDocuments,
;; and sends its commands through whatever adapter is registered (a fake one here).

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'lich)

(ert-deftest lich-loads-without-a-client ()
  (should (featurep 'lich))
  (should-not (featurep 'eglot))
  (should-not (featurep 'lsp-mode)))

;;;; Rendering

(defun lich-test-hash (plist)
  "PLIST as lsp-mode's default JSON object: a hash table with string keys (recursively)."
  (let ((table (make-hash-table :test #'equal)))
    (cl-loop for (key value) on plist by #'cddr
             do (puthash (substring (symbol-name key) 1)
                         (if (and (consp value) (keywordp (car value))) (lich-test-hash value) value)
                         table))
    table))

(defconst lich-test-events
  '(("run_start" nil)
    ("llm_start" (:turn 1))
    ("text_delta" (:turn 1 :text "Let me "))
    ("text_delta" (:turn 1 :text "look."))
    ("tool_call_start" (:name "read" :arguments (:path "hello.py")))
    ("tool_call_end" (:name "read" :ok t :summary "2 lines\nof hello.py"))
    ("tool_call_start" (:name "run_tests" :arguments "pytest   -q"))
    ("tool_call_end" (:name "run_tests" :ok :json-false :error "exit 1: 1 failed"))
    ("text_delta" (:turn 2 :text "The fix is"))
    ("llm_retry" (:turn 2 :provider "primary" :attempt 1 :max_attempts 4 :kind "rate_limit"
                  :action "retry" :delay_s 2 :next_provider "primary" :discarded_chars 10))
    ("text_delta" (:turn 2 :text "The fix is "))
    ("text_delta" (:turn 2 :text "to return 2."))
    ("run_end" (:stopped_reason "completed" :turns_used 2)))
  "A task's events as (TYPE DATA) with DATA a plist.")

(defconst lich-test-expected
  (concat "▶ t1\n"
          "Let me look.\n"
          "→ read {\"path\":\"hello.py\"}\n"
          "← read ok: 2 lines of hello.py\n"
          "→ run_tests pytest -q\n"
          "← run_tests failed: exit 1: 1 failed\n"
          "The fix is\n"
          "… provider primary failed (rate_limit): retrying in 2.0 s (attempt 2 of 4);"
          " the answer restarts below\n"
          "The fix is to return 2.\n"
          "■ completed\n"))

(defun lich-test-render (shape)
  "Render `lich-test-events' shaped by SHAPE (a function of a plist); return the text."
  (let ((lich-transcript-buffer (format " *lich-test-%s*" (random)))
        (lich--streaming nil))
    (unwind-protect
        (progn
          (dolist (event lich-test-events)
            (lich-handle-event
             (funcall shape (list :type (car event) :task_id "t1" :run_id "r1" :seq 1 :ts 0
                                  :data (cadr event)))))
          (with-current-buffer lich-transcript-buffer
            (should buffer-read-only)
            (buffer-substring-no-properties (point-min) (point-max))))
      (when (get-buffer lich-transcript-buffer) (kill-buffer lich-transcript-buffer)))))

(ert-deftest lich-renders-events-from-plists ()
  "Eglot's shape: text_delta glued, tool calls one-lined, llm_retry notice, run_end."
  (should (equal (lich-test-render #'identity) lich-test-expected)))

(ert-deftest lich-renders-events-from-hash-tables ()
  "lsp-mode's shape (hash tables, false as nil) renders the same text."
  (should (equal (lich-test-render
                  (lambda (event)
                    (let ((table (lich-test-hash event)))
                      ;; lsp-mode reads JSON false as nil.
                      (let ((data (gethash "data" table)))
                        (when (and (hash-table-p data) (eq (gethash "ok" data) :json-false))
                          (puthash "ok" nil data)))
                      table)))
                 lich-test-expected)))

(ert-deftest lich-renders-failover-and-ignores-unknown-events ()
  (let ((lich-transcript-buffer " *lich-test-failover*")
        (lich--streaming nil))
    (unwind-protect
        (progn
          (lich-handle-event '(:type "llm_retry" :data (:provider "a" :kind "server" :action "failover"
                                                        :next_provider "b" :discarded_chars 0)))
          (lich-handle-event '(:type "something_new" :data (:x 1)))
          (lich-handle-event '(:type "error" :data (:message "boom")))
          (lich-handle-event "not an event")
          (should (equal (with-current-buffer lich-transcript-buffer (buffer-string))
                         "… provider a failed (server): failing over to b\n! boom\n")))
      (kill-buffer lich-transcript-buffer))))

;;;; lich/saveDocuments

(ert-deftest lich-uri-round-trip ()
  (let* ((dir (file-name-as-directory (make-temp-file "lich-uri " t)))
         (file (expand-file-name "a b.py" dir)))
    (unwind-protect
        (progn
          (write-region "" nil file)
          (should (string-match-p "\\`file:///.*/a%20b\\.py\\'" (lich-path-to-uri file)))
          (should (equal (lich-uri-to-path (lich-path-to-uri file)) (file-truename file))))
      (delete-directory dir t))))

(ert-deftest lich-save-documents-saves-exactly-the-named-buffers ()
  (let* ((dir (file-name-as-directory (file-truename (make-temp-file "lich-save" t))))
         (edited (expand-file-name "edited.py" dir))
         (other (expand-file-name "other.py" dir))
         (created (expand-file-name "sub/new.py" dir))
         (closed (expand-file-name "closed.py" dir))
         buffers)
    (unwind-protect
        (progn
          (write-region "x = 1\n" nil edited)
          (write-region "y = 1\n" nil other)
          (push (find-file-noselect edited) buffers)
          (push (find-file-noselect other) buffers)
          (push (find-file-noselect created) buffers)
          (with-current-buffer (find-buffer-visiting edited) (goto-char (point-max)) (insert "x = 2\n"))
          (with-current-buffer (find-buffer-visiting other) (goto-char (point-max)) (insert "y = 2\n"))
          (let ((result (lich-save-documents
                         (vector (lich-path-to-uri edited) (lich-path-to-uri created)
                                 (concat "file://" closed)))))
            (should (equal (plist-get result :saved)
                           (vector (lich-path-to-uri edited) (lich-path-to-uri created))))
            (should (equal (plist-get result :failed)
                           (vector (list :uri (concat "file://" closed) :reason "not_open")))))
          (should (equal (with-temp-buffer (insert-file-contents edited) (buffer-string))
                         "x = 1\nx = 2\n"))
          (should-not (buffer-modified-p (find-buffer-visiting edited)))
          (should (file-exists-p created))
          ;; Not named: left unsaved.
          (should (buffer-modified-p (find-buffer-visiting other)))
          (should (equal (with-temp-buffer (insert-file-contents other) (buffer-string)) "y = 1\n")))
      (dolist (buffer buffers)
        (with-current-buffer buffer (set-buffer-modified-p nil))
        (kill-buffer buffer))
      (delete-directory dir t))))

;;;; Commands through an adapter

(defvar lich-test-sent nil "Requests the fake adapter got, newest first: (METHOD PARAMS).")
(defvar lich-test-answer nil "What the fake adapter answers.")

(defun lich-test-adapter (&optional connected)
  (lich-adapter-create
   :name 'fake
   :connection (lambda (_anywhere) (and connected 'fake-connection))
   :request (lambda (conn method params)
              (should (eq conn 'fake-connection))
              (push (list method params) lich-test-sent)
              lich-test-answer)
   :async-request (lambda (conn method params on-success _on-error)
                    (should (eq conn 'fake-connection))
                    (push (list method params) lich-test-sent)
                    (funcall on-success lich-test-answer))
   :document-uri (lambda () "file:///fake/hello.py")
   :position (lambda (pos) (list :line 0 :character (1- pos)))
   :start-hint "M-x fake-start"))

(defmacro lich-test-with-adapter (connected &rest body)
  (declare (indent 1))
  `(let ((lich-adapters (list (lich-test-adapter ,connected)))
         (lich-test-sent nil)
         (lich-transcript-buffer " *lich-test-commands*"))
     (unwind-protect (progn ,@body)
       (when (get-buffer lich-transcript-buffer) (kill-buffer lich-transcript-buffer)))))

(defun lich-test-sent-command ()
  "The last request: (COMMAND ARGUMENT), checking it was workspace/executeCommand."
  (let ((sent (car lich-test-sent)))
    (should (equal (car sent) "workspace/executeCommand"))
    (list (plist-get (cadr sent) :command) (aref (plist-get (cadr sent) :arguments) 0))))

(ert-deftest lich-commands-need-a-server ()
  (lich-test-with-adapter nil
    (let ((err (should-error (lich-status) :type 'user-error)))
      (should (equal (cadr err) "lich: no lich server is running (M-x fake-start)")))))

(ert-deftest lich-status-and-trust-go-through-the-adapter ()
  (lich-test-with-adapter t
    (setq lich-test-answer '(:server "lich-lsp"))
    (should (equal (lich-status) '(:server "lich-lsp")))
    (let ((sent (lich-test-sent-command)))
      (should (equal (car sent) "lich.status"))
      ;; No arguments: the object {} (a hash table every client encodes as {}).
      (should (and (hash-table-p (cadr sent)) (= (hash-table-count (cadr sent)) 0))))
    (setq lich-test-answer '(:state "untrusted" :message "lich: trust revoked for .lich/config.json"))
    (let ((shown nil))
      (cl-letf (((symbol-function 'message)
                 (lambda (format &rest args) (setq shown (apply #'format-message format args)))))
        (let ((current-prefix-arg '(4)))
          (call-interactively #'lich-trust-workspace)))
      (should (equal (lich-test-sent-command) '("lich.trustWorkspace" (:revoke t))))
      (should (equal shown "lich: trust revoked for .lich/config.json (untrusted)")))))

;;;; lich-status: MCP servers

(defconst lich-test-long-error
  (concat "connect: ECONNREFUSED 127.0.0.1:9\n  at request\t(retrying later) " (make-string 300 ?é)))

(defconst lich-test-mcp-status
  (list :server "lich-lsp"
        :mcp_servers
        (vector (list :name "files" :transport "stdio" :state "connected" :tools 12 :last_error nil)
                (list :name "one" :transport "http" :state "connected" :tools 1 :last_error nil)
                (list :name "web" :transport "http" :state "failed" :tools 0 :last_error lich-test-long-error)
                (list :name "ws" :state "refused" :tools 0 :last_error "workspace config not trusted")
                (list :name "lazy" :state "not_started" :tools 0 :last_error nil)
                (list :name "slow" :state "connecting" :tools 0 :last_error nil)
                (list :name "off" :state "disabled" :tools 0 :last_error nil)))
  "A `lich.status' result as Eglot reads it (plists, arrays as vectors, null as nil).")

(defconst lich-test-mcp-expected
  (let ((start "connect: ECONNREFUSED 127.0.0.1:9 at request (retrying later) "))
    (list "MCP files: connected, 12 tools"
          "MCP one: connected, 1 tool"
          (concat "MCP web: failed: " start (make-string (- 119 (length start)) ?é) "…")
          "MCP ws: refused: workspace config not trusted"
          "MCP lazy: not started"
          "MCP slow: connecting"
          "MCP off: disabled")))

(defun lich-test-shown-status (answer)
  "What `lich-status' shows (the `message' text) when the server answers ANSWER."
  (lich-test-with-adapter t
    (setq lich-test-answer answer)
    (let ((shown nil))
      (cl-letf (((symbol-function 'message)
                 (lambda (format &rest args) (setq shown (apply #'format-message format args)))))
        (should (eq (call-interactively #'lich-status) answer)))
      (should (equal (car (lich-test-sent-command)) "lich.status"))
      shown)))

(ert-deftest lich-status-shows-mcp-servers ()
  (should (equal (mapcar #'lich--mcp-line (append (plist-get lich-test-mcp-status :mcp_servers) nil))
                 lich-test-mcp-expected))
  (should (= (length (string-remove-prefix "MCP web: failed: " (nth 2 lich-test-mcp-expected)))
             lich-mcp-error-chars))
  ;; Through lich-status, from Eglot's plists and from lsp-mode's hash tables alike: the JSON
  ;; line (without the servers), then one indented line per MCP server.
  (let ((want (mapconcat #'identity
                         (cons "lich: {\"server\":\"lich-lsp\"}"
                               (mapcar (lambda (line) (concat "  " line)) lich-test-mcp-expected))
                         "\n")))
    (should (equal (lich-test-shown-status lich-test-mcp-status) want))
    (let ((table (lich-test-hash (list :server "lich-lsp"))))
      (puthash "mcp_servers" (vconcat (mapcar #'lich-test-hash (plist-get lich-test-mcp-status :mcp_servers)))
               table)
      (should (equal (lich-test-shown-status table) want)))))

(ert-deftest lich-status-tolerates-a-missing-or-malformed-mcp-servers ()
  ;; An older server: no field, the status shows as before.
  (should (equal (lich-test-shown-status '(:server "lich-lsp")) "lich: {\"server\":\"lich-lsp\"}"))
  (should (equal (lich-test-shown-status (list :server "lich-lsp" :mcp_servers []))
                 "lich: {\"server\":\"lich-lsp\",\"mcp_servers\":[]}"))
  (dolist (bad (list nil "files" 3 '(:files (:state "connected")) [nil 3 "x" ["a"]]))
    (should (equal (lich--mcp-lines bad) nil))
    (should (string-prefix-p "lich: {" (lich-test-shown-status (list :server "lich-lsp" :mcp_servers bad))))
    ;; One line: no MCP line was added.
    (should-not (string-match-p "\n" (lich-test-shown-status (list :server "lich-lsp" :mcp_servers bad)))))
  (should (equal (lich--mcp-lines [nil (:name "n" :state 7 :tools "many" :last_error 5)]) '("MCP n: unknown")))
  (should (equal (lich--mcp-line '(:name "n" :state "connected")) "MCP n: connected"))
  (should (equal (lich--mcp-line '(:name "w" :state "failed" :last_error :json-null)) "MCP w: failed")))

(ert-deftest lich-ask-sends-uri-and-region ()
  (lich-test-with-adapter t
    (setq lich-test-answer '(:stopped_reason "completed" :final "done"))
    (with-temp-buffer
      (setq buffer-file-name "/fake/hello.py")
      (insert "def hello():\n    return 1\n")
      (transient-mark-mode 1)
      (set-mark 5)
      (goto-char 10)
      (activate-mark)
      (unwind-protect (lich-ask "explain")
        (setq buffer-file-name nil)))
    (should (equal (lich-test-sent-command)
                   '("lich.ask" (:prompt "explain" :uri "file:///fake/hello.py"
                                 :range (:start (:line 0 :character 4) :end (:line 0 :character 9))))))
    (should (equal (with-current-buffer lich-transcript-buffer (buffer-string)) "» explain\n"))))

(ert-deftest lich-ask-code-action-asks-for-the-prompt-and-keeps-its-arguments ()
  (lich-test-with-adapter t
    (setq lich-test-answer '(:stopped_reason "completed"))
    (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "make it faster")))
      ;; lsp-mode's shape: a hash table (Eglot's: a plist, handled the same).
      (lich-run-ask-command
       (vector (lich-test-hash '(:uri "file:///fake/hello.py" :diagnostics [(:message "slow")])))))
    (let ((args (cadr (lich-test-sent-command))))
      (should (equal (plist-get args :prompt) "make it faster"))
      (should (equal (plist-get args :uri) "file:///fake/hello.py"))
      (should (equal (plist-get args :diagnostics) [(:message "slow")])))
    ;; With a prompt (Fix with agent: …): no question.
    (cl-letf (((symbol-function 'read-string) (lambda (&rest _) (error "asked"))))
      (lich-run-ask-command (vector '(:prompt "fix it" :uri "file:///fake/hello.py"))))
    (should (equal (lich-test-sent-command)
                   '("lich.ask" (:prompt "fix it" :uri "file:///fake/hello.py"))))))

;;;; lich-run-tests

(defconst lich-test-red
  '(:ok :json-false :summary "1 failed, 1 passed in 0.10s" :passed 1 :failed 1 :errors 0 :skipped 0
    :failures [(:test_id "tests/test_calc.py::test_add" :uri "file:///fake/tests/test_calc.py"
                :line 8 :message "assert -1 == 3")]
    :error "tests_failed: 1 failed, 1 passed")
  "A red `lich.runTests' result as Eglot reads it.")

(defconst lich-test-red-text
  (concat "lich: tests failed: 1 failed, 1 passed in 0.10s"
          " — tests/test_calc.py:9 tests/test_calc.py::test_add: assert -1 == 3"))

(defun lich-test-run-tests (answer &optional filter)
  "Run `lich-run-tests' with FILTER against the fake adapter answering ANSWER.
Returns (SHOWN RESULT): the last message and what ON-DONE got."
  (setq lich-test-answer answer)
  (let ((shown nil) (got 'not-called))
    ;; Failing tests are named relative to the project root: /fake/ here.  (Not by binding
    ;; `default-directory' to /fake/: native compilation may run a process in it to rebind
    ;; `message'.)
    (cl-letf (((symbol-function 'lich--project-directory) (lambda () "/fake/"))
              ((symbol-function 'message)
               (lambda (format &rest args) (setq shown (apply #'format-message format args)))))
      (lich-run-tests filter (lambda (result) (setq got result))))
    (list shown got)))

(ert-deftest lich-run-tests-green-red-and-error ()
  (lich-test-with-adapter t
    ;; Green: no filter is the object {}.
    (let ((green '(:ok t :summary "2 passed in 0.05s" :passed 2 :failed 0 :errors 0 :skipped 0
                   :failures [])))
      (should (equal (lich-test-run-tests green) (list "lich: tests passed: 2 passed in 0.05s" green)))
      (let ((sent (lich-test-sent-command)))
        (should (equal (car sent) "lich.runTests"))
        (should (and (hash-table-p (cadr sent)) (= (hash-table-count (cadr sent)) 0)))))
    ;; A filter goes along, trimmed; a blank one is no filter.
    (lich-test-run-tests '(:ok t :summary "1 passed") "  tests/test_calc.py::test_sub ")
    (should (equal (lich-test-sent-command) '("lich.runTests" (:filter "tests/test_calc.py::test_sub"))))
    (lich-test-run-tests '(:ok t :summary "1 passed") "   ")
    (should (hash-table-p (cadr (lich-test-sent-command))))
    ;; Red: the summary and the failing test, at its 1-based line, relative to the buffer's dir.
    (should (equal (car (lich-test-run-tests lich-test-red)) lich-test-red-text))
    ;; lsp-mode's shape (hash tables, false as nil) says the same.
    (let ((table (lich-test-hash lich-test-red)))
      (puthash "ok" nil table)
      (puthash "failures" (vector (lich-test-hash (aref (plist-get lich-test-red :failures) 0))) table)
      (should (equal (car (lich-test-run-tests table)) lich-test-red-text)))
    ;; No run happened: the error.
    (should (equal (car (lich-test-run-tests
                         '(:ok :json-false :summary "no_test_command: none configured" :passed 0
                           :failed 0 :errors 0 :skipped 0 :failures []
                           :error "no_test_command: none configured")))
                   "lich: running the tests failed: no_test_command: none configured"))))

(ert-deftest lich-run-tests-outcome-and-summary ()
  (should (eq (car (lich-test-outcome '(:ok :json-false :errors 1 :summary "1 error in 0.1s"))) 'failed))
  (should (eq (car (lich-test-outcome '(:ok :json-false :error "run_tests_busy: a run is going"))) 'error))
  (should (equal (lich-test-summary '(:failed 1 :passed 3)) "1 failed, 3 passed"))
  (should (equal (lich-test-summary '(:errors 2 :skipped 1)) "2 errors, 1 skipped"))
  (should (equal (lich-test-summary nil) "no tests ran"))
  ;; More failures than shown: counted.
  (let* ((one (aref (plist-get lich-test-red :failures) 0))
         (text (cdr (lich-test-outcome (list :ok :json-false :error "tests_failed: 5 failed"
                                             :summary "5 failed" :failures (make-vector 5 one))
                                       "/fake/"))))
    (should (string-suffix-p "(+2 more)" text))
    (should (= (cl-count ?\; text) 2))))

(ert-deftest lich-run-tests-interactive-filter-and-request-error ()
  (lich-test-with-adapter t
    (setq lich-test-answer '(:ok t :summary "1 passed"))
    ;; C-u asks for the filter; without it, none is asked.
    (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "-k add")))
      (let ((current-prefix-arg '(4)))
        (call-interactively #'lich-run-tests)))
    (should (equal (lich-test-sent-command) '("lich.runTests" (:filter "-k add"))))
    (cl-letf (((symbol-function 'read-string) (lambda (&rest _) (error "asked"))))
      (call-interactively #'lich-run-tests))
    (should (hash-table-p (cadr (lich-test-sent-command)))))
  ;; A failed request: said so, and ON-DONE gets nil.
  (let ((lich-adapters
         (list (lich-adapter-create
                :name 'failing
                :connection (lambda (_anywhere) 'conn)
                :async-request (lambda (_conn _method _params _on-success on-error)
                                 (funcall on-error '(:code -32601 :message "Unknown command lich.runTests")))
                :start-hint "M-x fake-start")))
        (shown nil) (got 'not-called))
    (cl-letf (((symbol-function 'message)
               (lambda (format &rest args) (setq shown (apply #'format-message format args)))))
      (lich-run-tests nil (lambda (result) (setq got result))))
    (should (equal shown "lich: running the tests failed: Unknown command lich.runTests"))
    (should (null got))))

;;; lich_shared.el ends here

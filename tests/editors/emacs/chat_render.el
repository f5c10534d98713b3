;;; chat_render.el --- lich-chat.el without a server, in batch ERT  -*- lexical-binding: t; -*-

;; Run by tests/editors/test_emacs.py:
;;   emacs --batch -L editors/emacs -l tests/editors/emacs/chat_render.el \
;;         -f ert-run-tests-batch-and-exit
;; A fake adapter keeps each `lich.ask' callback; events go through `lich-handle-event' as an
;; LSP client hands them over.  Checks: a first message names its new thread (`new_thread')
;; and the chat follows only that thread's events (not a run started elsewhere at the same
;; time), text streams in without moving point, a cancelled turn and a refused request are said
;; in plain words, a server (re)connect reloads the thread, and lich.el autoloads the commands.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'lich)

(defconst lich-test-autoloaded
  (mapcar (lambda (command) (cons command (and (commandp command)
                                               (autoloadp (symbol-function command)))))
          '(lich-chat lich-threads lich-new-thread lich-rewind))
  "Whether lich.el alone made each chat command an autoloaded command.")

(require 'lich-chat)

(ert-deftest lich-chat-commands-are-autoloaded ()
  (should (cl-every #'cdr lich-test-autoloaded)))

(defvar lich-test-asks nil
  "(ARGS ON-SUCCESS ON-ERROR COMMAND) of each asynchronous command, newest first.")

(defvar lich-test-connection 'conn
  "The fake adapter's connection: a restarted server is a new one.")

(defun lich-test-chat-adapter ()
  (lich-adapter-create
   :name 'fake
   :connection (lambda (_anywhere) lich-test-connection)
   :request (lambda (_conn _method _params) nil)
   :async-request (lambda (_conn _method params on-success on-error)
                    (push (list (aref (plist-get params :arguments) 0) on-success on-error
                                (plist-get params :command))
                          lich-test-asks))
   :document-uri (lambda () "file:///x")
   :position (lambda (_pos) '(:line 0 :character 0))
   :start-hint "fake"))

(defmacro lich-test-with-chat (&rest body)
  "BODY in a fresh chat buffer, with the fake adapter."
  (declare (indent 0))
  `(let ((lich-adapters (list (lich-test-chat-adapter)))
         (lich-test-asks nil)
         (lich-test-connection 'conn)
         (lich-chat-buffer-name (generate-new-buffer-name "*lich chat test*")))
     (let ((buffer (lich-chat)))
       (unwind-protect (with-current-buffer buffer ,@body)
         (kill-buffer buffer)))))

(defun lich-test-event (type task thread &rest data)
  (lich-handle-event (list :type type :task_id task :thread thread :data data)))

(defun lich-test-type-and-send (text)
  (goto-char (point-max))
  (insert text)
  (lich-chat-send))

(defun lich-test-text ()
  (buffer-substring-no-properties (point-min) lich-chat--output))

(ert-deftest lich-chat-streams-without-moving-point ()
  (lich-test-with-chat
    (let (th1)
      (lich-test-type-and-send "hello")
      (let ((args (car (car lich-test-asks))))
        (should (equal (plist-get args :prompt) "hello"))
        (should-not (plist-member args :thread))
        ;; The chat names its new thread, so it knows the task's events from the first one.
        (should (string-match-p "\\`chat-[0-9a-f]\\{16\\}\\'" (plist-get args :new_thread)))
        (should (string-match-p "new thread" (lich-chat--header)))
        ;; A new run another client started at the same moment, its events first: not adopted.
        (lich-test-event "run_start" "t9" "th9" :resumed :json-false)
        (lich-test-event "text_delta" "t9" "th9" :text "NOT MINE")
        (should-not lich-chat-thread)
        (should-not (string-match-p "NOT MINE" (lich-test-text)))
        (setq th1 (plist-get args :new_thread)))
      (lich-test-event "run_start" "t1" th1 :resumed :json-false)
      (goto-char (point-min))
      (lich-test-event "text_delta" "t1" th1 :text "Hi ")
      ;; The tool line shows the server's `target' (kind and target are computed once by the
      ;; server), not anything read out of the arguments.
      (lich-test-event "tool_call_start" "t1" th1 :name "read_file" :call_id "c1"
                       :arguments '(:path "a.py" :start 2 :end 3) :kind "read"
                       :target '(:path "a.py" :lines (:start 2 :end 3)))
      (lich-test-event "tool_call_end" "t1" th1 :name "read_file" :call_id "c1" :ok t
                       :kind "read" :target '(:path "a.py" :lines (:start 2 :end 3)))
      ;; Its approval question, drawn from the `approval' event's data.
      (lich-test-event "approval" "t1" th1 :call_id "c2" :id "approval-1" :tool "terminal"
                       :capability "process/exec" :kind "execute" :target '(:command "make  test")
                       :command "make  test" :cwd "/ws" :host nil
                       :what_will_run "runs `make test` with bash -lc in the workspace"
                       :question "the question's text, not read"
                       :options ["Allow once" "Allow always" "Deny"])
      (lich-test-event "tool_call_end" "t1" th1 :name "terminal" :call_id "c2" :ok :json-false
                       :error "refused: the user denied it" :kind "execute"
                       :target '(:command "make  test"))
      (lich-test-event "text_delta" "t1" th1 :text "there.")
      (should (= (point) (point-min)))
      (funcall (nth 1 (car lich-test-asks))
               (list :task_id "t1" :thread th1 :stopped_reason "final" :final "Hi there."))
      (should (equal lich-chat-thread th1))
      (should (equal (lich-test-text)
                     (concat "You: hello\nlich: Hi \n  read_file a.py (lines 2-3): ok\n"
                             "  approval asked: terminal `make test` in /ws\n"
                             "    runs `make test` with bash -lc in the workspace\n"
                             "  terminal make test: failed: refused: the user denied it\nthere.")))
      (should-not (string-match-p "NOT MINE" (lich-test-text)))
      ;; The follow-up names the thread (and no new one).
      (lich-test-type-and-send "more")
      (should (equal (plist-get (car (car lich-test-asks)) :thread) th1))
      (should-not (plist-member (car (car lich-test-asks)) :new_thread))
      ;; While it runs, another task's events on another thread stay out.
      (lich-test-event "text_delta" "t9" "th9" :text "STILL NOT MINE")
      (lich-test-event "text_delta" "t2" th1 :text "More.")
      (should (string-match-p "More\\.\\'" (lich-test-text)))
      (should-not (string-match-p "STILL NOT MINE" (lich-test-text))))))

(ert-deftest lich-chat-says-cancelled-and-errors-in-plain-words ()
  (lich-test-with-chat
    (lich-test-type-and-send "slow one")
    (funcall (nth 1 (car lich-test-asks))
             '(:task_id "t1" :thread "th1" :stopped_reason "aborted" :final ""))
    (should (string-match-p "^Cancelled\\.$" (lich-test-text)))
    (lich-test-type-and-send "again")
    (funcall (nth 2 (car lich-test-asks))
             '(:code -32602 :message "lich.ask: thread_busy: thread th1 is running task t2"))
    (should (string-match-p "^Error: lich.ask: thread_busy: thread th1 is running task t2$"
                            (lich-test-text)))
    (should-not (lich-chat-running-p))
    ;; The answer of a provider that did not stream comes from the final event.
    (lich-test-type-and-send "third")
    (lich-test-event "run_start" "t3" "th1" :resumed t)
    (lich-test-event "final" "t3" "th1" :text "Not streamed.")
    (funcall (nth 1 (car lich-test-asks))
             '(:task_id "t3" :thread "th1" :stopped_reason "final" :final "Not streamed."))
    (should (string-match-p "^lich: Not streamed\\.$" (lich-test-text)))
    (should (= 1 (how-many "Not streamed" (point-min) (point-max))))))

(defun lich-test-wait (what predicate)
  "Process timers and events until PREDICATE holds; fail naming WHAT after a few seconds."
  (let ((deadline (+ (float-time) 10)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.01))
    (unless (funcall predicate) (ert-fail (format "timed out waiting for %s" what)))))

(ert-deftest lich-chat-reloads-its-thread-when-the-server-connects ()
  (lich-test-with-chat
    (lich-test-type-and-send "hello")
    (funcall (nth 1 (car lich-test-asks))
             '(:task_id "t1" :thread "th1" :stopped_reason "final" :final "Hi."))
    ;; The server stops while this turn runs; its answer never comes.
    (lich-test-type-and-send "lost")
    (should (lich-chat-running-p))
    (goto-char (point-max))
    (insert "draft")
    (setq lich-test-asks nil
          lich-test-connection 'conn2)
    ;; Another lich server connecting is none of this chat's business; its own server is.
    (lich-handle-connect 'elsewhere)
    (lich-handle-connect 'conn2)
    (lich-test-wait "the reload" (lambda () lich-test-asks))
    (should (= (length lich-test-asks) 1))
    (should (equal (nth 3 (car lich-test-asks)) "lich.thread"))
    (should (equal (car (car lich-test-asks)) '(:thread "th1")))
    (should-not (lich-chat-running-p))
    (funcall (nth 1 (car lich-test-asks))
             (list :thread "th1"
                   :turns (vector (list :turn 1 :prompt "hello" :final "Hi."
                                        :stopped_reason "final" :tools [])
                                  (list :turn 2 :prompt "lost" :tools []))))
    (should (equal (lich-test-text)
                   (concat "You: hello\nlich: Hi.\n\nYou: lost\n"
                           "(the lich server restarted: thread reloaded)\n")))
    (should (equal (lich-chat--input-text) "draft"))
    (should (equal lich-chat-thread "th1"))
    ;; The next message continues the thread on the new server.
    (delete-region lich-chat--input (point-max))
    (lich-test-type-and-send "again")
    (should (equal (car (car lich-test-asks)) '(:prompt "again" :thread "th1" :origin "chat")))))

(defconst lich-test-long-thread-turns 200)
(defconst lich-test-long-thread-max-s 1.0
  "A 200-turn thread must open within this many seconds (issue #36).")

(ert-deftest lich-chat-opens-a-200-turn-thread-quickly ()
  (let* ((turns (vconcat
                 (cl-loop for n from 1 to lich-test-long-thread-turns
                          collect (list :turn n :prompt (format "question %d" n)
                                        :final (format "answer %d\n%s" n (make-string 400 ?x))
                                        :stopped_reason "final" :discarded :json-false
                                        :tools (vector (list :name "read_file" :ok t
                                                             :arguments "{\"path\": \"a.py\"}"
                                                             :target (list :path "a.py")))))))
         (adapter (lich-test-chat-adapter)))
    (setf (lich-adapter-request adapter)
          (lambda (_conn _method params)
            (let ((command (plist-get params :command)))
              (and (equal command "lich.thread") (list :thread "th1" :turns turns)))))
    (let ((lich-adapters (list adapter))
          (lich-chat-buffer-name (generate-new-buffer-name "*lich chat test*")))
      (let ((started (float-time))
            (buffer (lich-chat-load "th1")))
        (unwind-protect
            (with-current-buffer buffer
              (should (< (- (float-time) started) lich-test-long-thread-max-s))
              (should (equal lich-chat-thread "th1"))
              (should (= (how-many "^You: question" (point-min) (point-max))
                         lich-test-long-thread-turns))
              (goto-char (point-min))
              (search-forward "answer 200")
              (should (equal (lich-chat-turn-at-point) 200)))
          (kill-buffer buffer))))))

;;;; Input history (M-p / M-n), through the chat's own key bindings

(defun lich-test-press (keys)
  "Press KEYS in the chat through the command loop; return what it said in the echo area."
  (should (memq (key-binding (kbd keys)) '(lich-chat-previous-input lich-chat-next-input)))
  ;; Emptied first: a message like the last one would only add " [2 times]" to its line.
  (with-current-buffer (messages-buffer)
    (let ((inhibit-read-only t)) (erase-buffer)))
  (execute-kbd-macro (kbd keys))
  (with-current-buffer (messages-buffer) (buffer-substring-no-properties (point-min) (point-max))))

(defun lich-test-input-after (keys)
  "The input after pressing KEYS; point must be at its end."
  (lich-test-press keys)
  (should (= (point) (point-max)))
  (lich-chat--input-text))

(defun lich-test-answer (prompt thread)
  "Send PROMPT and let its turn end with an answer on THREAD."
  (lich-test-type-and-send prompt)
  (funcall (nth 1 (car lich-test-asks))
           (list :task_id "t" :thread thread :stopped_reason "final" :final "ok")))

(ert-deftest lich-chat-input-history-walks-the-prompts-sent ()
  (lich-test-with-chat
    ;; Nothing sent yet: M-p says so and leaves the input alone.
    (insert "typing")
    (should (string-match-p "no prompt sent yet" (lich-test-press "M-p")))
    (should (equal (lich-chat--input-text) "typing"))
    (delete-region lich-chat--input (point-max))
    (lich-test-answer "first question" "th1")
    (lich-test-answer "second\nquestion" "th1")
    (goto-char (point-max))
    (insert "my draft")
    ;; From the conversation too: the input changes, point goes to its end.
    (goto-char (point-min))
    (let ((conversation (lich-test-text)))
      (should (equal (lich-test-input-after "M-p") "second\nquestion"))
      (should (equal (lich-test-input-after "M-p") "first question"))
      (let ((said (lich-test-press "M-p")))
        (should (string-match-p "no older prompt" said)))
      (should (equal (lich-chat--input-text) "first question"))
      (should (= (point) (point-max)))
      (should (equal (lich-test-input-after "M-n") "second\nquestion"))
      (should (equal (lich-test-input-after "M-n") "my draft"))
      (should (string-match-p "no newer prompt" (lich-test-press "M-n")))
      (should (equal (lich-chat--input-text) "my draft"))
      ;; Only the input changed.
      (should (equal (lich-test-text) conversation)))
    ;; The other keys are still there.
    (should (eq (key-binding (kbd "RET")) #'lich-chat-send))
    (should (eq (key-binding (kbd "C-j")) #'newline))
    (should (eq (key-binding (kbd "TAB")) #'completion-at-point))
    (should (eq (key-binding (kbd "C-c C-g")) #'lich-chat-reload))
    ;; Sending a recalled prompt again does not list it twice in a row.
    (delete-region lich-chat--input (point-max))
    (lich-test-input-after "M-p")
    (lich-chat-send)
    (should (equal (plist-get (car (car lich-test-asks)) :prompt) "second\nquestion"))
    (should (equal (lich-chat--input-text) ""))
    (should (equal (lich-test-input-after "M-p") "second\nquestion"))
    (should (equal (lich-test-input-after "M-p") "first question"))))

(ert-deftest lich-chat-input-history-holds-a-loaded-threads-prompts ()
  (let* ((turns (vector (list :turn 1 :prompt "mine" :final "a" :stopped_reason "final" :tools [])
                        (list :turn 2 :prompt "alpha" :final "b" :stopped_reason "final" :tools [])
                        (list :turn 3 :prompt "beta" :final "c" :stopped_reason "final" :tools [])
                        (list :turn 4 :prompt "beta" :discarded t :tools [])
                        (list :turn 5 :prompt "gamma" :discarded t :tools [])))
         (adapter (lich-test-chat-adapter)))
    (setf (lich-adapter-request adapter)
          (lambda (_conn _method params)
            (and (equal (plist-get params :command) "lich.thread")
                 (list :thread "th2" :turns turns))))
    (let ((lich-adapters (list adapter))
          (lich-test-asks nil)
          (lich-chat-buffer-name (generate-new-buffer-name "*lich chat test*")))
      (let ((buffer (lich-chat)))
        (unwind-protect
            (with-current-buffer buffer
              (lich-test-answer "earlier" "th1")
              (lich-test-answer "mine" "th1")
              (lich-chat-load "th2")
              (let ((walk (lambda ()
                            "The prompts M-p shows, newest first, until it says there is none."
                            (delete-region lich-chat--input (point-max))
                            (cl-loop repeat 10
                                     until (string-match-p "no older prompt"
                                                           (lich-test-press "M-p"))
                                     collect (lich-chat--input-text)))))
                ;; The thread's prompts (rewound ones too) are the newest, oldest to newest;
                ;; "beta" twice in a row is once; "mine", sent before, is not listed twice.
                (should (equal (funcall walk) '("gamma" "beta" "alpha" "mine" "earlier")))
                ;; Reloading the same thread (C-c C-g) changes nothing.
                (execute-kbd-macro (kbd "C-c C-g"))
                (should (equal (funcall walk) '("gamma" "beta" "alpha" "mine" "earlier")))
                ;; Bounded by `lich-chat-history-size': the oldest go.
                (let ((lich-chat-history-size 3))
                  (lich-chat-load "th2")
                  (delete-region lich-chat--input (point-max))
                  (should (equal (lich-test-input-after "M-p") "gamma"))
                  (should (equal (lich-test-input-after "M-p") "beta"))
                  (should (equal (lich-test-input-after "M-p") "alpha"))
                  (should (string-match-p "no older prompt" (lich-test-press "M-p")))
                  (should (equal (lich-chat--input-text) "alpha")))))
          (kill-buffer buffer))))))

;;;; Issue #45: cancel, queue, tool details, markdown

(defvar lich-test-sync-requests nil
  "Synchronous requests the chat made (the fake adapter answers them with nil).")

(defun lich-test-visible ()
  "The conversation as shown: hidden tool details left out."
  (let ((position (point-min)) (end (marker-position lich-chat--output)) parts)
    (while (< position end)
      (let ((next (next-single-char-property-change position 'invisible nil end)))
        (unless (invisible-p position)
          (push (buffer-substring-no-properties position next) parts))
        (setq position next)))
    (apply #'concat (nreverse parts))))

(defmacro lich-test-with-sync-log (&rest body)
  "BODY with the fake adapter's synchronous requests logged in `lich-test-sync-requests'."
  (declare (indent 0))
  `(let ((lich-test-sync-requests nil))
     (lich-test-with-chat
       (setf (lich-adapter-request (car lich-adapters))
             (lambda (_conn method params) (push (cons method params) lich-test-sync-requests) nil))
       ,@body)))

(ert-deftest lich-chat-cancel-does-not-wait-and-never-sticks ()
  (lich-test-with-sync-log
    (lich-test-type-and-send "first")
    (let* ((first-ask (car lich-test-asks))
           (th (plist-get (car first-ask) :new_thread)))
      ;; The chat shows the answer: the server is told not to repeat it.
      (should (equal (plist-get (car first-ask) :origin) "chat"))
      (lich-test-event "run_start" "t1" th)
      (funcall (nth 1 first-ask)
               (list :task_id "t1" :thread th :stopped_reason "error" :error "provider failed"))
      (should-not (lich-chat-running-p))
      (lich-test-type-and-send "second")
      (let ((second-ask (car lich-test-asks)))
        ;; A late event of the failed turn is not the running turn's task.
        (lich-test-event "run_end" "t1" th :stopped_reason "error")
        (should-not lich-chat--task)
        ;; C-c C-c before the turn has a task: nothing to cancel yet, the header says so.
        (execute-kbd-macro (kbd "C-c C-c"))
        (should (eq (car lich-test-asks) second-ask))
        (should (string-match-p "cancelling" (lich-chat--header)))
        ;; Its first event names it: the cancel goes out then, without waiting for an answer.
        (lich-test-event "run_start" "t2" th)
        (should (equal (nth 3 (car lich-test-asks)) "lich.cancel"))
        (should (equal (car (car lich-test-asks)) '(:task_id "t2")))
        (funcall (nth 1 second-ask) (list :task_id "t2" :thread th :stopped_reason "aborted"))
        (should-not (lich-chat-running-p))
        (should (string-match-p "^Cancelled\\.$" (lich-test-text)))
        (should-not (string-match-p "cancelling" (lich-chat--header)))
        ;; The next message is sent, and C-c C-c on it is an asynchronous request too.
        (lich-test-type-and-send "third")
        (let ((third-ask (car lich-test-asks)))
          (should (equal (plist-get (car third-ask) :prompt) "third"))
          (lich-test-event "text_delta" "t3" th :text "working")
          (execute-kbd-macro (kbd "C-c C-c"))
          (should (equal (car (car lich-test-asks)) '(:task_id "t3")))
          (funcall (nth 1 third-ask) (list :task_id "t3" :thread th :stopped_reason "aborted")))
        (should-not (lich-chat-running-p))
        (should-not lich-test-sync-requests)))))

(ert-deftest lich-chat-queues-a-message-sent-while-a-turn-runs ()
  (lich-test-with-chat
    (lich-test-type-and-send "first")
    (let* ((first-ask (car lich-test-asks))
           (th (plist-get (car first-ask) :new_thread)))
      (lich-test-type-and-send "second")
      (lich-test-type-and-send "third")
      ;; Nothing more was sent; both wait, shown under the conversation, the input is free.
      (should (= (length lich-test-asks) 1))
      (should (equal lich-chat--queue '("second" "third")))
      (should (string-match-p "Queued: second\nQueued: third"
                              (overlay-get lich-chat--queue-overlay 'before-string)))
      (should (equal (lich-chat--input-text) ""))
      ;; C-c C-k takes the last one back to the empty input.
      (execute-kbd-macro (kbd "C-c C-k"))
      (should (equal lich-chat--queue '("second")))
      (should (equal (lich-chat--input-text) "third"))
      (should-not (string-match-p "third" (overlay-get lich-chat--queue-overlay 'before-string)))
      ;; Text streamed meanwhile goes above the queue, which stays right under it.
      (lich-test-event "text_delta" "t1" th :text "one")
      (should (= (marker-position lich-chat--output) (overlay-start lich-chat--queue-overlay)))
      (should (string-suffix-p "one" (lich-test-text)))
      (funcall (nth 1 first-ask) (list :task_id "t1" :thread th :stopped_reason "final" :final "one"))
      ;; The turn ended: the queued message went out on the thread, the draft stays.
      (should (= (length lich-test-asks) 2))
      (should (equal (car (car lich-test-asks)) (list :prompt "second" :thread th :origin "chat")))
      (should (lich-chat-running-p))
      (should-not lich-chat--queue)
      (should-not lich-chat--queue-overlay)
      (should (string-match-p "^You: second$" (lich-test-text)))
      (should (equal (lich-chat--input-text) "third")))))

(ert-deftest lich-chat-keeps-a-queued-message-it-cannot-send ()
  (lich-test-with-chat
    (lich-test-type-and-send "first")
    (let ((ask (car lich-test-asks)))
      (lich-test-type-and-send "second")
      ;; The server is gone when the turn ends: the message stays queued, and the chat says why.
      (setq lich-test-connection nil)
      (funcall (nth 1 ask) '(:task_id "t1" :thread "th1" :stopped_reason "final" :final "one"))
      (should (= (length lich-test-asks) 1))
      (should (equal lich-chat--queue '("second")))
      (should (string-match-p "Queued: second" (overlay-get lich-chat--queue-overlay 'before-string)))
      (should (string-match-p "^The queued message was not sent: lich: no lich server is running"
                              (lich-test-text))))))

(ert-deftest lich-chat-tool-line-opens-to-its-diff-or-output ()
  (lich-test-with-chat
    (lich-test-type-and-send "edit")
    (let ((th (plist-get (car (car lich-test-asks)) :new_thread)))
      (lich-test-event "tool_call_start" "t1" th :name "edit_file" :call_id "c1" :kind "edit"
                       :arguments '(:path "a.py" :old_string "x = 1" :new_string "x = 2")
                       :target '(:path "a.py"))
      (lich-test-event "tool_call_end" "t1" th :name "edit_file" :call_id "c1" :ok t
                       :kind "edit" :summary "Edited a.py (+1 -1)" :target '(:path "a.py"))
      (lich-test-event "tool_call_start" "t1" th :name "terminal" :call_id "c2" :kind "execute"
                       :arguments '(:command "make test") :target '(:command "make test"))
      (lich-test-event "tool_call_end" "t1" th :name "terminal" :call_id "c2" :ok t
                       :kind "execute" :summary "3 passed\nall good"
                       :target '(:command "make test"))
      (should (equal (lich-test-visible)
                     "You: edit\n  ▸ edit_file a.py: ok\n  ▸ terminal make test: ok\n"))
      ;; TAB on the edit's line shows its diff; on the command's, its output.
      (goto-char (point-min))
      (search-forward "edit_file")
      (call-interactively (key-binding (kbd "TAB")))
      (should (equal (lich-test-visible)
                     (concat "You: edit\n  ▾ edit_file a.py: ok\n"
                             "    --- a.py\n    +++ a.py\n    -x = 1\n    +x = 2\n"
                             "  ▸ terminal make test: ok\n")))
      (search-forward "terminal")
      (call-interactively (key-binding (kbd "RET")))
      (should (string-suffix-p "  ▾ terminal make test: ok\n    3 passed\n    all good\n"
                               (lich-test-visible)))
      ;; Again: hidden again.
      (goto-char (point-min))
      (search-forward "edit_file")
      (call-interactively (key-binding (kbd "TAB")))
      (should (string-prefix-p "You: edit\n  ▸ edit_file a.py: ok\n  ▾ terminal"
                               (lich-test-visible)))
      ;; Off a tool line TAB still completes (the input's `@' mentions).
      (goto-char (point-max))
      (should (eq (key-binding (kbd "TAB")) #'completion-at-point)))))

(ert-deftest lich-chat-draws-answers-as-markdown ()
  (should (require 'markdown-mode nil t))
  (let ((answer "Use **bold** and `code`."))
    (cl-flet ((face-at (word)
                (save-excursion
                  (goto-char (point-min))
                  (search-forward word)
                  (let ((face (get-text-property (1- (point)) 'font-lock-face)))
                    (if (listp face) face (list face))))))
      (lich-test-with-chat
        (lich-test-type-and-send "md")
        (let* ((ask (car lich-test-asks))
               (th (plist-get (car ask) :new_thread)))
          (lich-test-event "text_delta" "t1" th :text "Use **bold** ")
          (lich-test-event "text_delta" "t1" th :text "and `code`.")
          (funcall (nth 1 ask) (list :task_id "t1" :thread th :stopped_reason "final"
                                     :final answer))
          ;; The text stays as written; its parts take markdown-mode's faces.
          (should (string-match-p (concat "^lich: " (regexp-quote answer) "$") (lich-test-text)))
          (should (memq 'markdown-bold-face (face-at "bold")))
          (should (memq 'markdown-inline-code-face (face-at "code")))
          (should (memq 'lich-chat-user-face (face-at "md")))))
      (let ((lich-chat-markdown nil))
        (lich-test-with-chat
          (lich-test-type-and-send "plain")
          (let* ((ask (car lich-test-asks))
                 (th (plist-get (car ask) :new_thread)))
            (lich-test-event "text_delta" "t1" th :text answer)
            (funcall (nth 1 ask) (list :task_id "t1" :thread th :stopped_reason "final"
                                       :final answer))
            (should-not (face-at "bold"))))))))

(provide 'chat_render)
;;; chat_render.el ends here

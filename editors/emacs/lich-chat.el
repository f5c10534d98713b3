;;; lich-chat.el --- lich-lsp: a conversation with the agent in a buffer  -*- lexical-binding: t; -*-

;; Version: 0.2
;; Package-Requires: ((emacs "27.1"))
;; Keywords: tools, languages

;;; Commentary:

;; `M-x lich-chat': the current thread of lich-lsp (docs/conversations.md) in a buffer of its
;; own, `lich-chat-mode'.  The conversation is read-only; the input follows the prompt marker
;; at the end.  RET at the input sends it (`lich.ask', with the buffer's `thread' once there is
;; one, so every message continues the conversation), C-j inserts a newline, TAB (or C-M-i)
;; completes an `@path' mention through `lich.mentions', M-p / M-n walk the prompts sent
;; before (`lich-chat-history-size').  The answer streams in as the
;; server's `lich/event' notifications arrive, without moving point; each tool call is one
;; line naming its file or command, which TAB (or RET) on it opens to its diff or output, and
;; a provider error, a refused request or a cancelled turn is said in plain words.  Where
;; `markdown-mode' is installed the answers are drawn as markdown (`lich-chat-markdown').
;; A message sent while a turn runs is queued, shown under the conversation, and sent when
;; the turn ends; C-c C-k takes the last queued one back.  C-c C-c cancels the running turn
;; without waiting for the server (its `lich.ask' result says how the turn ended).  The chat
;; sends `origin: "chat"', so the server does not repeat the answer in the echo area.
;;
;; Like the other commands of lich.el it needs no particular LSP client: it talks to the lich
;; server of the buffer the chat was opened from (else any running one) through the adapter of
;; lich-eglot.el or lich-lsp-mode.el.  lich.el autoloads the commands `lich-chat',
;; `lich-threads', `lich-new-thread' and `lich-rewind'.

;;; Code:

(require 'cl-lib)
(require 'seq)
(require 'subr-x)
(require 'lich)

(defcustom lich-chat-buffer-name "*lich chat*"
  "Name of the chat buffer."
  :type 'string
  :group 'lich)

(defcustom lich-chat-prompt "» "
  "The marker before the chat's input."
  :type 'string
  :group 'lich)

(defcustom lich-chat-history-size 100
  "How many prompts M-p / M-n in the chat's input can bring back.
The history holds the prompts sent from the chat buffer in this
Emacs session and, once a thread is shown (`lich-threads',
C-c C-g, a rewind or a server restart), that thread's
turn prompts as the newest, oldest to newest; the same prompt twice
in a row is kept once, and a prompt of the shown thread moves up
rather than being listed twice.  The oldest prompts beyond this
many are forgotten; 0 keeps none."
  :type 'natnum
  :group 'lich)

(defcustom lich-chat-markdown t
  "Non-nil: draw answers as markdown where `markdown-mode' is installed.
Headings, emphasis, code and links get markdown-mode's faces; the
text itself stays as the model wrote it.  Without markdown-mode the
answers are plain text."
  :type 'boolean
  :group 'lich)

(defconst lich-chat-detail-lines 40
  "At most this many lines of a tool call's diff or output when it is opened.")

(defconst lich-chat-title-chars 60
  "At most this many characters of a thread's title in `lich-threads'.")

(defface lich-chat-prompt-face '((t :inherit minibuffer-prompt))
  "The chat's prompt marker." :group 'lich)
(defface lich-chat-user-face '((t :inherit bold))
  "Your messages in the chat." :group 'lich)
(defface lich-chat-label-face '((t :inherit font-lock-keyword-face))
  "The `lich:' label before an answer." :group 'lich)
(defface lich-chat-tool-face '((t :inherit shadow))
  "Tool call lines in the chat." :group 'lich)
(defface lich-chat-problem-face '((t :inherit warning))
  "Errors, refusals and cancellations in the chat." :group 'lich)
(defface lich-chat-rewound-face '((t :inherit shadow))
  "Turns a rewind took back." :group 'lich)
(defface lich-chat-queued-face '((t :inherit italic))
  "Messages waiting for the running turn to end." :group 'lich)

;;;; Buffer state

(defvar-local lich-chat-thread nil
  "The id of the thread this chat continues, nil before its first message.")
(defvar-local lich-chat--new-thread nil
  "The id this chat chose for the new thread of its running first message.")
(defvar-local lich-chat--ask-connection nil
  "The connection the running turn's `lich.ask' went to.")
(defvar-local lich-chat--origin nil
  "The buffer the chat was opened from: its lich server answers the chat.")
(defvar-local lich-chat--output nil
  "Marker where the conversation grows (before the prompt marker).")
(defvar-local lich-chat--input nil
  "Marker at the start of the input.")
(defvar-local lich-chat--pending nil
  "Non-nil while a `lich.ask' of this chat waits for its result.")
(defvar-local lich-chat--task nil
  "The task id of the running turn, once its first event named it.")
(defvar-local lich-chat--turns 0
  "How many turns the thread has (rewound ones too: they keep their numbers).")
(defvar-local lich-chat--turn nil
  "The number of the turn being rendered.")
(defvar-local lich-chat--answered nil
  "Non-nil once the running turn's answer text is in the buffer.")
(defvar-local lich-chat--streaming nil
  "Non-nil while the conversation ends inside streamed answer text.")
(defvar-local lich-chat--tool-targets nil
  "Alist call_id -> (TARGET . ARGUMENTS) of a running tool call.
TARGET is what it works on in a few words, ARGUMENTS the call's.")
(defvar-local lich-chat--tool-count 0
  "How many tool calls with details the buffer holds.
Each one's details are hidden under its own invisibility spec.")
(defvar-local lich-chat--answer-start nil
  "Marker at the start of the running turn's answer text.
`lich-chat-markdown' draws from there when the answer is whole.")
(defvar-local lich-chat--cancel-wanted nil
  "Non-nil once \\[lich-chat-cancel] asked to stop the running turn.")
(defvar-local lich-chat--finished-tasks nil
  "The task ids of this chat's turns that ended, newest first (a few).
An event of one that arrives after its `lich.ask' result is not
the next turn's.")
(defvar-local lich-chat--queue nil
  "Prompts sent while a turn ran, oldest first.
They are sent one by one as turns end.")
(defvar-local lich-chat--queue-overlay nil
  "The overlay that shows `lich-chat--queue' under the conversation.")
(defvar-local lich-chat--history nil
  "The prompts M-p brings back, newest first (see `lich-chat-history-size').")
(defvar-local lich-chat--history-index nil
  "Index in `lich-chat--history' of the prompt at the input.
Nil when the input is not one of the history's.")
(defvar-local lich-chat--history-draft nil
  "What the input held when M-p started walking the history.
M-n past the newest prompt brings it back.")

;;;; Requests (to the lich server of the origin buffer, else any)

(defmacro lich-chat--from-origin (&rest body)
  "Run BODY in the chat's origin buffer when it is live.
So the lich server of that buffer answers the chat."
  (declare (indent 0) (debug t))
  `(let ((origin lich-chat--origin))
     (if (buffer-live-p origin) (with-current-buffer origin ,@body) (progn ,@body))))

(defun lich-chat--execute (command args)
  "Run lich COMMAND with ARGS (a plist) and return its result."
  (lich-chat--from-origin (lich-execute command args)))

(defun lich-chat--execute-async (command args on-success on-error)
  "Run lich COMMAND with ARGS without waiting.
Call ON-SUCCESS with the result or ON-ERROR with the error."
  (lich-chat--from-origin
    (lich--request-async "workspace/executeCommand"
                         (list :command command :arguments (vector (or args (lich--empty-object))))
                         on-success on-error)))

;;;; Writing the conversation

(defun lich-chat--props (face)
  "Text properties of conversation text in FACE: read-only, tagged with the turn."
  (list 'read-only t 'front-sticky t 'rear-nonsticky t 'font-lock-face face
        'lich-chat-turn lich-chat--turn))

(defun lich-chat--insert (text &optional face stream extra)
  "Append TEXT (in FACE) to the conversation.
A line of its own unless STREAM: streamed text joins the text before it.
EXTRA is a plist of more text properties for TEXT and its newline."
  (let ((inhibit-read-only t)
        (buffer-undo-list t))
    (save-excursion
      (goto-char lich-chat--output)
      (when (and (not (bobp)) (not (bolp)) (not (and stream lich-chat--streaming)))
        (insert (apply #'propertize "\n" (lich-chat--props nil))))
      (insert (apply #'propertize text (append extra (lich-chat--props face))))
      (unless stream (insert (apply #'propertize "\n" (append extra (lich-chat--props nil)))))))
  (setq lich-chat--streaming stream))

(defun lich-chat--insert-user (prompt discarded)
  "Start a turn: a blank line, then PROMPT (marked rewound when DISCARDED)."
  (unless (= lich-chat--output (point-min)) (lich-chat--insert ""))
  (lich-chat--insert (format "You%s: %s" (if discarded " (rewound)" "") prompt)
                     (if discarded 'lich-chat-rewound-face 'lich-chat-user-face)))

(defun lich-chat--insert-answer (text &optional stream)
  "Append answer TEXT; the turn's first answer text gets the `lich:' label.
Text that is not STREAM is the whole answer: drawn as markdown at once."
  (unless lich-chat--answered
    (lich-chat--insert "lich: " 'lich-chat-label-face t)
    (setq lich-chat--answered t
          lich-chat--answer-start (copy-marker lich-chat--output)))
  (lich-chat--insert text nil t)
  (unless stream
    (lich-chat--end-line)
    (lich-chat--render-markdown)))

(defun lich-chat--markdown-faces (text)
  "TEXT's faces as `markdown-mode' draws it: a list of (START END FACE).
Nil when markdown-mode is not installed or `lich-chat-markdown' is off."
  (when (and lich-chat-markdown
             ;; Plain sentences (most answers) need no markdown buffer: a long thread opens fast.
             (string-match-p "[*`#_|>~[]\\|^[ \t]*\\([-+]\\|[0-9]+[.)]\\) " text)
             (require 'markdown-mode nil t))
    (with-temp-buffer
      (insert text)
      ;; Its mode hooks are the user's; markdown-mode itself is all the chat needs.
      (delay-mode-hooks (funcall (if (fboundp 'gfm-mode) 'gfm-mode 'markdown-mode)))
      (font-lock-ensure)
      (let ((position (point-min)) faces)
        (while (< position (point-max))
          (let ((next (next-single-property-change position 'face nil (point-max)))
                (face (get-text-property position 'face)))
            (when face (push (list (1- position) (1- next) face) faces))
            (setq position next)))
        (nreverse faces)))))

(defun lich-chat--render-markdown ()
  "Draw the running turn's answer text as markdown.
From `lich-chat--answer-start' on.  Only answer text takes
markdown's faces: tool lines and notes keep theirs."
  (when (markerp lich-chat--answer-start)
    (let* ((start (marker-position lich-chat--answer-start))
           (end (marker-position lich-chat--output))
           (faces (and (< start end)
                       (lich-chat--markdown-faces (buffer-substring-no-properties start end))))
           (inhibit-read-only t)
           (buffer-undo-list t))
      (pcase-dolist (`(,from ,to ,face) faces)
        (let ((position (+ start from)))
          (while (< position (+ start to))
            (let ((next (next-single-property-change position 'font-lock-face nil (+ start to))))
              (unless (get-text-property position 'font-lock-face)
                (put-text-property position next 'font-lock-face face))
              (setq position next))))))
    (set-marker lich-chat--answer-start nil)
    (setq lich-chat--answer-start nil)))

(defun lich-chat--end-line ()
  "End the conversation's last line (streamed text) if it is open."
  (when (and lich-chat--streaming (/= lich-chat--output (point-min)))
    (let ((inhibit-read-only t)
          (buffer-undo-list t))
      (save-excursion
        (goto-char lich-chat--output)
        (unless (bolp) (insert (apply #'propertize "\n" (lich-chat--props nil)))))))
  (setq lich-chat--streaming nil))

(defun lich-chat--tool-target (target)
  "What a tool call works on, in a few words, from the server's TARGET.
TARGET is the `target' object of a tool event or of a `lich.thread'
tool call (computed once by the server: a file and lines, a command, a
URL or a query); nothing is derived from the call's arguments."
  (when (lich--json-object-p target)
    (let* ((paths (delq nil (mapcar #'lich--string
                                    (lich--json-array (lich-json-get target "paths")))))
           (path (if (cdr paths) (string-join paths ", ")
                   (lich--string (lich-json-get target "path"))))
           (query (lich--string (lich-json-get target "query")))
           (lines (lich-json-get target "lines"))
           (start (and (lich--json-object-p lines) (lich-json-get lines "start")))
           (end (and (lich--json-object-p lines) (lich-json-get lines "end"))))
      (cond (query (lich--one-line (if path (format "%s in %s" query path) query)))
            (path (concat (lich--one-line path)
                          (if (numberp start)
                              (format " (lines %d-%s)" start (if (numberp end) end ""))
                            "")))
            (t (let ((other (or (lich--string (lich-json-get target "command"))
                                (lich--string (lich-json-get target "url")))))
                 (and other (lich--one-line other))))))))

(defun lich-chat--approval-text (data)
  "The chat's lines for an `approval' event's DATA.
The tool, the command it runs and where, and what it starts."
  (let* ((command (lich--string (lich-json-get data "command")))
         (target (unless command (lich-chat--tool-target (lich-json-get data "target"))))
         (host (lich--string (lich-json-get data "host")))
         (cwd (lich--string (lich-json-get data "cwd")))
         (runs (lich--string (lich-json-get data "what_will_run"))))
    (concat "  approval asked: " (lich--one-line (or (lich--string (lich-json-get data "tool")) "?"))
            (cond (command (format " `%s`" (lich--one-line command)))
                  (target (concat " " target))
                  (t ""))
            (if host (concat " on " (lich--one-line host)) "")
            (if cwd (concat " in " (lich--one-line cwd)) "")
            (if runs (concat "\n    " (lich--one-line runs)) ""))))

(defun lich-chat--tool-line (name target ok problem &optional details)
  "The one line of a tool call.
NAME, its TARGET file, OK or failed with PROBLEM.  A call with
DETAILS (its diff or output) is marked as one that opens."
  (format "  %s%s%s: %s" (if details "▸ " "") (or name "?") (if target (concat " " target) "")
          (if ok "ok" (concat "failed" (if problem (concat ": " (lich--one-line problem)) "")))))

(defun lich-chat--arguments (arguments)
  "ARGUMENTS of a tool call as a JSON object, or nil.
`lich.thread' clips long arguments into a string: read it back
when it still parses."
  (cond ((lich--json-object-p arguments) arguments)
        ((and (stringp arguments) (fboundp 'json-parse-string))
         (let ((value (ignore-errors (json-parse-string arguments :object-type 'plist
                                                        :null-object nil))))
           (and (lich--json-object-p value) value)))))

(defun lich-chat--lines (text)
  "TEXT's lines, without the empty one a final newline would make."
  (split-string (string-remove-suffix "\n" text) "\n"))

(defun lich-chat--diff-lines (name arguments)
  "The diff of an edit by tool NAME with ARGUMENTS, as lines, or nil.
edit_file's old and new text, write_file's content, apply_patch's
hashline patch (its `~' payload lines as additions, its ops as hunk
headers)."
  (let* ((args (lich-chat--arguments arguments))
         (arg (lambda (key) (let ((value (lich-json-get args key))) (and (stringp value) value))))
         (path (or (funcall arg "path") "?")))
    (pcase name
      ("edit_file"
       (let ((old (funcall arg "old_string"))
             (new (funcall arg "new_string")))
         (when (and old new)
           (append (list (concat "--- " path) (concat "+++ " path))
                   (mapcar (lambda (line) (concat "-" line)) (lich-chat--lines old))
                   (mapcar (lambda (line) (concat "+" line)) (lich-chat--lines new))))))
      ("write_file"
       (let ((content (funcall arg "content")))
         (when content
           (cons (concat "+++ " path)
                 (mapcar (lambda (line) (concat "+" line)) (lich-chat--lines content))))))
      ("apply_patch"
       (let ((patch (funcall arg "input")))
         (when patch
           (delq nil (mapcar (lambda (line)
                               (cond ((string-prefix-p "~" line) (concat "+" (substring line 1)))
                                     ((string-prefix-p "@@" line)
                                      (concat "+++ " (string-trim (substring line 2))))
                                     ((string-empty-p line) nil)
                                     (t (concat "@@ " line " @@"))))
                             (lich-chat--lines patch)))))))))

(defun lich-chat--tool-details (name arguments ok output)
  "What opening a tool call shows, as lines (nil: nothing more to show).
NAME's diff from its ARGUMENTS when it edited (OK), then its OUTPUT
(the result the model saw, or the error)."
  (let* ((diff (and ok (lich-chat--diff-lines name arguments)))
         (output (lich--string output))
         (lines (append diff
                        (and output (not diff)
                             ;; A failure's one-line error is the heading's already.
                             (or ok (string-match-p "\n" output) (> (length output) 160))
                             (lich-chat--lines output)))))
    (when lines
      (mapcar (lambda (line) (concat "    " line))
              (if (> (length lines) lich-chat-detail-lines)
                  (append (cl-subseq lines 0 lich-chat-detail-lines)
                          (list (format "… %d more lines" (- (length lines) lich-chat-detail-lines))))
                lines)))))

(defvar lich-chat-tool-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "TAB") #'lich-chat-toggle-tool)
    (define-key map (kbd "RET") #'lich-chat-toggle-tool)
    (define-key map [mouse-1] #'lich-chat-toggle-tool)
    map)
  "Keys on a tool call line that opens: TAB, RET or a click shows its details.")

(defun lich-chat--insert-tool (name target ok problem face details)
  "Append a tool call's line (NAME, TARGET, OK, PROBLEM) in FACE.
With DETAILS (lines), they follow it hidden, and TAB on the line shows them."
  (if (null details)
      (lich-chat--insert (lich-chat--tool-line name target ok problem) face)
    (let ((spec (intern (format "lich-chat-tool-%d" (cl-incf lich-chat--tool-count)))))
      (add-to-invisibility-spec spec)
      (lich-chat--insert (lich-chat--tool-line name target ok problem t) face nil
                         (list 'lich-chat-details spec 'keymap lich-chat-tool-map
                               'mouse-face 'highlight
                               'help-echo "TAB or RET: show or hide the call's diff or output"))
      (lich-chat--insert (string-join details "\n") face nil (list 'invisible spec)))))

(defun lich-chat-toggle-tool ()
  "Show or hide the diff or output of the tool call on this line."
  (interactive)
  (let ((spec (get-text-property (line-beginning-position) 'lich-chat-details)))
    (unless spec (user-error "lich: no tool call on this line"))
    (let* ((open (not (memq spec (if (listp buffer-invisibility-spec) buffer-invisibility-spec))))
          (inhibit-read-only t)
          (buffer-undo-list t)
          (marker (save-excursion
                    (goto-char (line-beginning-position))
                    (and (search-forward (if open "▾" "▸") (line-end-position) t)
                         (1- (point))))))
      (if open (add-to-invisibility-spec spec) (remove-from-invisibility-spec spec))
      (when marker
        (save-excursion
          (goto-char marker)
          (let ((properties (text-properties-at marker)))
            (delete-char 1)
            (insert (apply #'propertize (if open "▸" "▾") properties)))))
      (unless open (message "lich: TAB again hides it")))))

(defun lich-chat--outcome (reason error)
  "What the chat says about a turn that ended with REASON and ERROR.
Nil for an answer."
  (let ((error (lich--string error)))
    (pcase reason
      ((or "final" 'nil) (and error (concat "Error: " (lich--one-line error))))
      ("aborted" "Cancelled.")
      ("budget" "Stopped: the agent used all its turns (max_turns) before answering.")
      ("error" (concat "Error: " (if error (lich--one-line error) "the task failed")))
      (_ (format "Stopped (%s)%s" reason (if error (concat ": " (lich--one-line error)) ""))))))

;;;; Events of the running turn

(defun lich-chat--buffers ()
  "The live chat buffers."
  (cl-remove-if-not (lambda (buffer)
                      (eq (buffer-local-value 'major-mode buffer) 'lich-chat-mode))
                    (buffer-list)))

(defun lich-chat--mine-p (event)
  "Whether EVENT belongs to this chat's running turn.
Its thread says so: a thread runs one task at a time, and a first
message named its new thread (`new_thread'), which every event of
its task carries from the first one.  That first event's task
becomes the chat's (for \\[lich-chat-cancel])."
  (let ((task (lich-json-get event "task_id"))
        (thread (lich-json-get event "thread")))
    (when (and lich-chat--pending
               (stringp thread)
               (equal thread (or lich-chat-thread lich-chat--new-thread))
               ;; A late event of the turn before (its result came first) is not this turn's:
               ;; adopting its task would make \[lich-chat-cancel] stop a task that ended.
               (not (member task lich-chat--finished-tasks))
               (or (null lich-chat--task) (equal task lich-chat--task)))
      (unless lich-chat--task
        (setq lich-chat--task task)
        ;; \[lich-chat-cancel] before the turn had a task: stop it now.
        (when lich-chat--cancel-wanted (lich-chat--send-cancel)))
      t)))

(defun lich-chat--render-event (event)
  "Show EVENT of the running turn: answer text, tool calls, retries."
  (let ((data (lich-json-get event "data")))
    (pcase (lich-json-get event "type")
      ("text_delta"
       (let ((text (lich--string (lich-json-get data "text"))))
         (when text (lich-chat--insert-answer text t))))
      ("tool_call_start"
       (push (cons (lich-json-get data "call_id")
                   (cons (lich-chat--tool-target (lich-json-get data "target"))
                         (lich-json-get data "arguments")))
             lich-chat--tool-targets))
      ("tool_call_end"
       (let* ((ok (eq (lich-json-get data "ok") t))
              (name (lich-json-get data "name"))
              (started (cdr (assoc (lich-json-get data "call_id") lich-chat--tool-targets)))
              (problem (lich-json-get data "error")))
         (lich-chat--insert-tool
          name (or (lich-chat--tool-target (lich-json-get data "target")) (car started))
          ok problem (if ok 'lich-chat-tool-face 'lich-chat-problem-face)
          (lich-chat--tool-details name (cdr started) ok
                                   (if ok (lich-json-get data "summary") problem)))))
      ("approval"
       ;; The question as the server's data; the question itself follows as Emacs's prompt.
       (lich-chat--insert (lich-chat--approval-text data) 'lich-chat-problem-face))
      ("llm_retry"
       (let ((discarded (lich-json-get data "discarded_chars")))
         ;; The restarted answer is shown again, labelled, under the notice.
         (when (and (numberp discarded) (> discarded 0)) (setq lich-chat--answered nil)))
       (lich-chat--insert (lich--retry-notice data) 'lich-chat-problem-face))
      ("final"
       ;; A provider that does not stream sends the answer only here.
       (let ((text (lich--string (lich-json-get data "text"))))
         (when (and text (not lich-chat--answered)) (lich-chat--insert-answer text))))
      ("compress_start" (lich-chat--insert "… compressing the conversation" 'lich-chat-tool-face))
      ((or "llm_end" "turn_end") (setq lich-chat--streaming nil)))))

(defun lich-chat--on-event (event)
  "`lich-event-functions' member: route EVENT to the chat whose turn it belongs to."
  (cl-loop for buffer in (lich-chat--buffers)
           when (with-current-buffer buffer
                  (when (lich-chat--mine-p event)
                    (lich-chat--render-event event)
                    t))
           return t))

(add-hook 'lich-event-functions #'lich-chat--on-event)

(defun lich-chat--turn-ended (task)
  "Forget the running turn (its TASK id, when known, is remembered as ended)."
  (let ((task (or (lich--string task) lich-chat--task)))
    (when task
      (setq lich-chat--finished-tasks (cons task (seq-take lich-chat--finished-tasks 15)))))
  (setq lich-chat--pending nil
        lich-chat--new-thread nil
        lich-chat--ask-connection nil
        lich-chat--task nil
        lich-chat--cancel-wanted nil
        lich-chat--tool-targets nil))

(defun lich-chat--finish (result)
  "The turn's `lich.ask' RESULT arrived: say how it ended.
Then the oldest queued message, if any, is sent."
  (setq lich-chat-thread (or (lich--string (lich-json-get result "thread"))
                              lich-chat-thread lich-chat--new-thread))
  (lich-chat--turn-ended (lich-json-get result "task_id"))
  ;; The server's number for this turn (lich.ask's `turn'; another client may have added turns
  ;; meanwhile): the turn's text, tagged with the next number when it was sent, takes it.
  (let ((turn (lich-json-get result "turn")))
    (if (not (integerp turn))
        (setq lich-chat--turns (1+ lich-chat--turns)) ; a server from before `turn'
      (when (and (integerp lich-chat--turn) (/= turn lich-chat--turn))
        (lich-chat--renumber lich-chat--turn turn))
      (setq lich-chat--turns turn
            lich-chat--turn turn)))
  (let ((final (lich--string (lich-json-get result "final")))
        (reason (lich-json-get result "stopped_reason")))
    (when (and final (equal reason "final") (not lich-chat--answered))
      (lich-chat--insert-answer final))
    (setq lich-chat--streaming nil)
    (lich-chat--render-markdown)
    (dolist (note (list (lich-chat--outcome reason (lich-json-get result "error"))
                        (lich--string (lich-json-get result "refused_message"))
                        (lich--string (lich-json-get result "review_message"))))
      (when note (lich-chat--insert note 'lich-chat-problem-face))))
  (force-mode-line-update)
  (lich-chat--send-queued))

(defun lich-chat--renumber (old new)
  "Tag the conversation text of turn OLD (the running turn's guess) as turn NEW."
  (let ((inhibit-read-only t)
        (position (point-min))
        (end (marker-position lich-chat--output)))
    (while (< position end)
      (let ((next (next-single-property-change position 'lich-chat-turn nil end)))
        (when (eql (get-text-property position 'lich-chat-turn) old)
          (put-text-property position next 'lich-chat-turn new))
        (setq position next)))))

(defun lich-chat--failed (err)
  "The turn's `lich.ask' request failed with ERR (e.g. thread_busy:).
A queued message is sent next all the same."
  (lich-chat--turn-ended nil)
  (setq lich-chat--streaming nil)
  (lich-chat--render-markdown)
  (lich-chat--insert (concat "Error: " (lich--one-line (lich--error-text err)))
                     'lich-chat-problem-face)
  (force-mode-line-update)
  (lich-chat--send-queued))

;;;; Sending

(defun lich-chat-running-p ()
  "Whether this chat's turn is running."
  lich-chat--pending)

(defun lich-chat--input-text ()
  (buffer-substring-no-properties lich-chat--input (point-max)))

;;;; Input history

(defun lich-chat--history-trim ()
  "Forget the prompts beyond `lich-chat-history-size', the oldest first."
  (let ((size (max 0 lich-chat-history-size)))
    (if (zerop size)
        (setq lich-chat--history nil)
      (let ((last (nthcdr (1- size) lich-chat--history)))
        (when last (setcdr last nil))))))

(defun lich-chat--history-push (prompt)
  "Make PROMPT the newest of the history, unless it already is or is blank."
  (unless (or (string-empty-p (string-trim prompt))
              (equal prompt (car lich-chat--history)))
    (push prompt lich-chat--history)))

(defun lich-chat--history-add (prompt)
  "Remember PROMPT, just sent, as the newest of the history."
  (lich-chat--history-push prompt)
  (lich-chat--history-trim)
  (setq lich-chat--history-index nil
        lich-chat--history-draft nil))

(defun lich-chat--history-add-thread (turns)
  "Make the prompts of TURNS the newest of the history.
TURNS are `lich.thread''s, oldest first.  A prompt sent earlier
that the thread holds moves up rather than appearing twice, so
reloading the chat's own thread changes nothing."
  (let ((prompts (delq nil (mapcar (lambda (turn) (lich--string (lich-json-get turn "prompt")))
                                   turns)))
        (in-thread (make-hash-table :test #'equal)))
    (dolist (prompt prompts) (puthash prompt t in-thread))
    (setq lich-chat--history (cl-remove-if (lambda (prompt) (gethash prompt in-thread))
                                           lich-chat--history))
    (mapc #'lich-chat--history-push prompts)
    (lich-chat--history-trim)
    (setq lich-chat--history-index nil
          lich-chat--history-draft nil)))

(defun lich-chat--replace-input (text)
  "Put TEXT at the input in place of what is there; point to its end.
The conversation above is not touched."
  (delete-region lich-chat--input (point-max))
  (goto-char (point-max))
  (insert text))

(defun lich-chat--history-walk (step)
  "Show the prompt STEP places older (positive) or newer (negative) at the input."
  (let ((index (+ (or lich-chat--history-index -1) step))
        (count (length lich-chat--history)))
    (cond ((null lich-chat--history)
           (goto-char (point-max))
           (message "lich: no prompt sent yet in this chat"))
          ((>= index count)
           (goto-char (point-max))
           (message "lich: no older prompt (the oldest of %d is shown)" count))
          ((< index 0)
           (goto-char (point-max))
           (if (null lich-chat--history-index)
               (message "lich: no newer prompt")
             ;; Past the newest: what was typed before walking comes back.
             (lich-chat--replace-input (or lich-chat--history-draft ""))
             (setq lich-chat--history-index nil
                   lich-chat--history-draft nil)))
          (t
           (unless lich-chat--history-index
             (setq lich-chat--history-draft (lich-chat--input-text)))
           (setq lich-chat--history-index index)
           (lich-chat--replace-input (nth index lich-chat--history))))))

(defun lich-chat-previous-input ()
  "Replace the input with the previous prompt sent from this chat.
The first press keeps what you typed: M-n past the newest prompt
brings it back.  See `lich-chat-history-size'."
  (interactive)
  (lich-chat--history-walk 1))

(defun lich-chat-next-input ()
  "Replace the input with the next (newer) prompt of the history.
Past the newest, the input you had typed before the first M-p."
  (interactive)
  (lich-chat--history-walk -1))

(defun lich-chat-send ()
  "Send the input as the next message of the thread.
On the conversation, move to the input instead."
  (interactive)
  (if (< (point) lich-chat--input)
      (goto-char (point-max))
    (let ((prompt (string-trim (lich-chat--input-text))))
      (cond ((string-empty-p prompt) (user-error "lich: type a message first"))
            (t
             (delete-region lich-chat--input (point-max))
             (lich-chat--history-add prompt)
             (if lich-chat--pending
                 (lich-chat--enqueue prompt)
               (lich-chat--send prompt)))))))

(defun lich-chat--new-thread-id ()
  "A fresh id for a new thread: `chat-' and 16 hex digits.
Random enough that two Emacs sessions on one workspace do not collide."
  (concat "chat-" (substring (md5 (format "%s %s %s %s" (random) (float-time) (emacs-pid)
                                          (buffer-name)))
                             0 16)))

(defun lich-chat--send (prompt)
  "Send PROMPT on this chat's thread (a new thread when it has none)."
  (let ((buffer (current-buffer))
        (args (list :prompt prompt))
        ;; No server: say so and keep the input.
        (connection (cdr (lich-chat--from-origin (lich--connection)))))
    (if lich-chat-thread
        (setq args (plist-put args :thread lich-chat-thread))
      ;; The chat names the new thread itself, so it knows its task's events from the first.
      (setq lich-chat--new-thread (lich-chat--new-thread-id))
      (setq args (plist-put args :new_thread lich-chat--new-thread)))
    (setq lich-chat--turn (1+ lich-chat--turns)
          lich-chat--ask-connection connection
          lich-chat--pending t
          lich-chat--task nil
          lich-chat--cancel-wanted nil
          lich-chat--answered nil
          lich-chat--answer-start nil
          lich-chat--tool-targets nil)
    ;; The chat shows the answer: the server need not repeat it in the echo area.
    (setq args (plist-put args :origin "chat"))
    (lich-chat--insert-user prompt nil)
    (lich-chat--execute-async
     "lich.ask" args
     (lambda (result)
       (when (buffer-live-p buffer) (with-current-buffer buffer (lich-chat--finish result))))
     (lambda (err)
       (when (buffer-live-p buffer) (with-current-buffer buffer (lich-chat--failed err)))))
    (force-mode-line-update)))

(defun lich-chat-cancel ()
  "Cancel this chat's running turn.
Does not wait for the server: the turn's own `lich.ask' result says
how it ended (\"Cancelled.\").  Pressed before the turn's first event
named its task, the turn is stopped as soon as it does."
  (interactive)
  (unless lich-chat--pending (user-error "lich: no turn is running in this chat"))
  (setq lich-chat--cancel-wanted t)
  (if lich-chat--task
      (lich-chat--send-cancel)
    (message "lich: the turn stops as soon as it starts"))
  (force-mode-line-update))

(defun lich-chat--send-cancel ()
  "Ask the server to stop the running turn's task, without waiting.
A synchronous request here would wait inside Emacs's handling of
the server's messages, where the turn's own result can be held back
until a later request (the chat then stayed \"running\")."
  (let ((buffer (current-buffer)))
    (lich-chat--execute-async
     "lich.cancel" (list :task_id lich-chat--task)
     #'ignore
     (lambda (err)
       (when (buffer-live-p buffer)
         (message "lich: cancelling failed: %s" (lich--one-line (lich--error-text err))))))))

;;;; Queued messages (sent while a turn runs)

(defun lich-chat--enqueue (prompt)
  "Queue PROMPT: it is sent when the running turn ends."
  (setq lich-chat--queue (append lich-chat--queue (list prompt)))
  (lich-chat--draw-queue)
  (message "lich: queued; sent when the turn ends (C-c C-k takes it back)"))

(defun lich-chat--draw-queue ()
  "Show the queued messages between the conversation and the input."
  (when (overlayp lich-chat--queue-overlay) (delete-overlay lich-chat--queue-overlay))
  (setq lich-chat--queue-overlay nil)
  (when lich-chat--queue
    ;; Over the prompt's first character, excluding text inserted before it: the conversation
    ;; grows above the queue.
    (let ((overlay (make-overlay lich-chat--output (1+ lich-chat--output) nil t nil)))
      (overlay-put overlay 'before-string
                   (propertize
                    (concat (mapconcat (lambda (prompt)
                                         (concat "Queued: " (lich--one-line prompt)))
                                       lich-chat--queue "\n")
                            "  (C-c C-k takes the last back)\n")
                    'face 'lich-chat-queued-face))
      (setq lich-chat--queue-overlay overlay))))

(defun lich-chat--send-queued ()
  "Send the oldest queued message, if any (a turn just ended).
With no server to send it to, it stays queued and the chat says why."
  (when (and lich-chat--queue (not lich-chat--pending))
    (let ((prompt (car lich-chat--queue)))
      (condition-case err
          (progn
            (lich-chat--send prompt)
            (pop lich-chat--queue))
        (error (lich-chat--insert (concat "The queued message was not sent: "
                                          (error-message-string err))
                                  'lich-chat-problem-face)))
      (lich-chat--draw-queue))))

(defun lich-chat-unqueue ()
  "Take the last queued message back: it is not sent.
When the input is empty it comes back there, to edit and send again."
  (interactive)
  (unless lich-chat--queue (user-error "lich: no message is queued"))
  (let ((prompt (car (last lich-chat--queue))))
    (setq lich-chat--queue (butlast lich-chat--queue))
    (lich-chat--draw-queue)
    (if (string-empty-p (string-trim (lich-chat--input-text)))
        (progn (lich-chat--replace-input prompt)
               (message "lich: taken off the queue, back at the input"))
      (message "lich: taken off the queue: %s" (lich--one-line prompt)))))

;;;; `@' mentions

(defun lich-chat--mention-candidates (prefix)
  "Workspace paths for an `@' mention starting with PREFIX (`lich.mentions')."
  (let ((result (ignore-errors (lich-chat--execute "lich.mentions" (list :prefix prefix)))))
    (cl-remove-if-not #'stringp (lich--json-array (lich-json-get result "candidates")))))

(defun lich-chat-mention-capf ()
  "`completion-at-point' for an `@path' mention in the input."
  (when (and lich-chat--input (>= (point) lich-chat--input))
    (let ((start (save-excursion
                   (skip-chars-backward "^ \t\n@" lich-chat--input)
                   (point))))
      (when (and (> start lich-chat--input) (eq (char-before start) ?@)
                 (or (= (1- start) lich-chat--input)
                     (memq (char-before (1- start)) '(?\s ?\t ?\n ?\())))
        (list start (point)
              (completion-table-with-cache #'lich-chat--mention-candidates)
              :exclusive 'no)))))

;;;; The buffer

(defvar lich-chat-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'lich-chat-send)
    (define-key map (kbd "C-j") #'newline)
    (define-key map (kbd "M-p") #'lich-chat-previous-input)
    (define-key map (kbd "M-n") #'lich-chat-next-input)
    (define-key map (kbd "TAB") #'completion-at-point)
    (define-key map (kbd "C-c C-c") #'lich-chat-cancel)
    (define-key map (kbd "C-c C-k") #'lich-chat-unqueue)
    (define-key map (kbd "C-c C-t") #'lich-threads)
    (define-key map (kbd "C-c C-n") #'lich-new-thread)
    (define-key map (kbd "C-c C-r") #'lich-rewind)
    (define-key map (kbd "C-c C-g") #'lich-chat-reload)
    map)
  "Keys of `lich-chat-mode'.")

(defun lich-chat--header ()
  (format "lich chat · %s%s · RET send · C-j newline · @ TAB path · C-c C-t threads · C-c C-n new · C-c C-r rewind"
          (if lich-chat-thread (concat "thread " lich-chat-thread) "new thread")
          (cond (lich-chat--cancel-wanted " · cancelling")
                (lich-chat--pending " · running (C-c C-c cancels)")
                (t ""))))

(defun lich-chat--erase ()
  "Empty the conversation and the input; put the prompt marker back."
  (let ((inhibit-read-only t)
        (buffer-undo-list t))
    (erase-buffer)
    (insert (propertize (concat "\n" lich-chat-prompt)
                        'read-only t 'front-sticky t 'rear-nonsticky t
                        'font-lock-face 'lich-chat-prompt-face))
    (setq lich-chat--output (copy-marker (point-min) t)
          lich-chat--input (copy-marker (point-max))
          lich-chat--streaming nil
          lich-chat--history-index nil
          lich-chat--history-draft nil))
  (lich-chat--draw-queue))

(define-derived-mode lich-chat-mode text-mode "lich-chat"
  "A conversation with lich-lsp (one thread; see docs/conversations.md).
The conversation is read-only; type after the prompt marker at the end.

\\{lich-chat-mode-map}"
  (setq-local header-line-format '(:eval (lich-chat--header)))
  (setq-local completion-at-point-functions (list #'lich-chat-mention-capf))
  (lich-chat--erase))

(defun lich-chat--buffer ()
  "The chat buffer, made (in `lich-chat-mode') when there is none."
  (let ((origin (current-buffer))
        (buffer (get-buffer-create lich-chat-buffer-name)))
    (with-current-buffer buffer
      (unless (derived-mode-p 'lich-chat-mode) (lich-chat-mode))
      (unless (eq origin buffer)
        (setq lich-chat--origin origin
              default-directory (buffer-local-value 'default-directory origin))))
    buffer))

;;;###autoload
(defun lich-chat ()
  "Show the chat with lich-lsp (its current thread) and move to the input."
  (interactive)
  (let ((buffer (lich-chat--buffer)))
    (pop-to-buffer buffer)
    (goto-char (point-max))
    buffer))

;;;###autoload
(defun lich-new-thread ()
  "Empty the chat: the next message starts a new thread."
  (interactive)
  (with-current-buffer (lich-chat--buffer)
    (when lich-chat--pending (user-error "lich: wait for the running turn or cancel it first"))
    (setq lich-chat-thread nil
          lich-chat--new-thread nil
          lich-chat--turns 0)
    (lich-chat--erase))
  (lich-chat))

(defun lich-chat--render-turn (turn)
  "Append TURN (one of `lich.thread''s turns) to the conversation."
  (let* ((discarded (eq (lich-json-get turn "discarded") t))
         (tool-face (if discarded 'lich-chat-rewound-face 'lich-chat-tool-face))
         (lich-chat--turn (lich-json-get turn "turn"))
         (lich-chat--answered nil))
    (lich-chat--insert-user (or (lich-json-get turn "prompt") "") discarded)
    (dolist (tool (lich--json-array (lich-json-get turn "tools")))
      (let ((name (lich-json-get tool "name"))
            (ok (eq (lich-json-get tool "ok") t))
            (result (lich-json-get tool "result")))
        (lich-chat--insert-tool
         name (lich-chat--tool-target (lich-json-get tool "target")) ok result tool-face
         (lich-chat--tool-details name (lich-json-get tool "arguments") ok result))))
    (let ((final (lich--string (lich-json-get turn "final")))
          (outcome (lich-chat--outcome (lich-json-get turn "stopped_reason")
                                       (lich-json-get turn "error"))))
      (when final (lich-chat--insert-answer final))
      (when outcome (lich-chat--insert outcome 'lich-chat-problem-face)))))

(defun lich-chat--show (thread result)
  "Show THREAD from its `lich.thread' RESULT: every turn, rewound ones marked.
What the user was typing at the input stays."
  (let ((turns (lich--json-array (lich-json-get result "turns")))
        (input (lich-chat--input-text)))
    (lich-chat--erase)
    (setq lich-chat-thread thread
          lich-chat--turns (length turns))
    (mapc #'lich-chat--render-turn turns)
    (lich-chat--history-add-thread turns)
    (when (eq (lich-json-get result "running") t)
      (lich-chat--insert "(a turn of this thread is running elsewhere)" 'lich-chat-problem-face))
    (save-excursion (goto-char (point-max)) (insert input))))

(defun lich-chat-load (thread)
  "Show THREAD (its id) in the chat: every turn, rewound ones marked."
  (with-current-buffer (lich-chat--buffer)
    (when lich-chat--pending (user-error "lich: wait for the running turn or cancel it first"))
    (lich-chat--show thread (lich-chat--execute "lich.thread" (list :thread thread)))
    (current-buffer)))

(defun lich-chat-reload ()
  "Read this chat's thread again from the server.
After a server restart, or a turn run elsewhere."
  (interactive)
  (with-current-buffer (lich-chat--buffer)
    (unless lich-chat-thread (user-error "lich: this chat has no thread yet"))
    (lich-chat-load lich-chat-thread)))

;;;; A server restart

(defun lich-chat--on-connect (connection)
  "`lich-connect-functions' member: CONNECTION (a lich server) is up.
Every chat that server answers reloads its thread, after the
client has finished its own setup (so the chat's buffer is
managed by the new server)."
  (run-at-time 0 nil #'lich-chat--reload-after-connect connection))

(add-hook 'lich-connect-functions #'lich-chat--on-connect)

(defun lich-chat--reload-after-connect (connection)
  "Reload the thread of every chat that CONNECTION answers, saying so in one line."
  (dolist (buffer (lich-chat--buffers))
    (with-current-buffer buffer
      (when (eq (cdr (ignore-errors (lich-chat--from-origin (lich--connection)))) connection)
        (when (and lich-chat--pending (not (eq lich-chat--ask-connection connection)))
          ;; Its `lich.ask' went to the server that stopped: no answer will come.
          (setq lich-chat--pending nil
                lich-chat--task nil
                lich-chat--ask-connection nil
                lich-chat-thread (or lich-chat-thread lich-chat--new-thread)
                lich-chat--new-thread nil))
        (when (and lich-chat-thread (not lich-chat--pending))
          (lich-chat--reload-async))))))

(defun lich-chat--reload-async ()
  "Read this chat's thread again from the server without waiting, then say so."
  (let ((buffer (current-buffer))
        (thread lich-chat-thread))
    (lich-chat--execute-async
     "lich.thread" (list :thread thread)
     (lambda (result)
       (when (buffer-live-p buffer)
         (with-current-buffer buffer
           ;; Not over a turn the user started meanwhile, nor another thread picked meanwhile.
           (when (and (equal thread lich-chat-thread) (not lich-chat--pending))
             (lich-chat--show thread result)
             (lich-chat--insert "(the lich server restarted: thread reloaded)"
                                'lich-chat-tool-face)
             ;; A message queued behind the turn the old server took with it goes out now.
             (lich-chat--send-queued)))))
     (lambda (err)
       (when (buffer-live-p buffer)
         (with-current-buffer buffer
           (unless lich-chat--pending
             (let ((text (lich--one-line (lich--error-text err))))
               ;; Pruned, or a first message the old server never began: nothing to continue.
               (when (and (string-match-p "unknown_thread:" text) (equal thread lich-chat-thread))
                 (setq lich-chat-thread nil))
               (lich-chat--insert (concat "The lich server restarted; reloading the thread failed: "
                                          text)
                                  'lich-chat-problem-face)))))))))

(defun lich-chat--thread-label (thread)
  "The completion label of THREAD (an entry of `lich.threads')."
  (let ((turns (lich-json-get thread "turns")))
    (format "%s  (%s %s%s) %s"
            (truncate-string-to-width (or (lich--string (lich-json-get thread "title")) "(untitled)")
                                      lich-chat-title-chars nil nil "…")
            (if (numberp turns) turns "?") (if (equal turns 1) "turn" "turns")
            (if (eq (lich-json-get thread "running") t) ", running" "")
            (lich-json-get thread "thread"))))

;;;###autoload
(defun lich-threads ()
  "Pick one of the workspace's threads (newest first) and show it in the chat."
  (interactive)
  (let* ((threads (with-current-buffer (if (derived-mode-p 'lich-chat-mode)
                                            (current-buffer)
                                          (lich-chat--buffer))
                    (lich--json-array
                     (lich-json-get (lich-chat--execute "lich.threads" nil) "threads"))))
         (choices (mapcar (lambda (thread) (cons (lich-chat--thread-label thread)
                                                 (lich-json-get thread "thread")))
                          threads)))
    (unless choices (user-error "lich: this workspace has no threads yet"))
    (let* ((table (lambda (string predicate action)
                    (if (eq action 'metadata)
                        '(metadata (display-sort-function . identity))  ; newest first
                      (complete-with-action action choices string predicate))))
           (choice (completing-read "lich thread: " table nil t)))
      (lich-chat-load (cdr (assoc choice choices)))
      (lich-chat))))

(defun lich-chat-turn-at-point ()
  "The number of the turn whose text is at point, or nil."
  (get-text-property (point) 'lich-chat-turn))

;;;###autoload
(defun lich-rewind (turn)
  "Rewind this chat's thread to before TURN: its file changes and the conversation.
Interactively the turn at point, else asks for its number.  Turns
TURN to the last are taken back (docs/conversations.md#rewind); the
chat then shows them as rewound."
  (interactive
   (with-current-buffer (lich-chat--buffer)
     (let ((turn (or (lich-chat-turn-at-point)
                     (read-number "lich: rewind to before turn: " lich-chat--turns))))
       (unless (y-or-n-p (format "Rewind turn %d and later (their edits too)? " turn))
         (user-error "lich: not rewound"))
       (list turn))))
  (with-current-buffer (lich-chat--buffer)
    (unless lich-chat-thread (user-error "lich: this chat has no thread yet"))
    (let ((result (lich-chat--execute "lich.rewind" (list :thread lich-chat-thread :turn turn))))
      (message "%s" (or (lich--string (lich-json-get result "message")) "lich: rewound"))
      (lich-chat-load lich-chat-thread)
      result)))

(provide 'lich-chat)
;;; lich-chat.el ends here

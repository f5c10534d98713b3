;;; lich-completion.el --- lich-lsp: ghost text as you type  -*- lexical-binding: t; -*-

;; Version: 0.2
;; Package-Requires: ((emacs "27.1"))
;; Keywords: tools, languages, convenience

;;; Commentary:

;; `lich-completion-mode', a buffer-local minor mode: as you type, lich's completion model
;; (the `completion' key of the lich config, docs/completions.md) suggests the text that
;; follows, shown after the cursor as grey "ghost text" (an overlay; the buffer is not
;; touched).  TAB accepts it, M-f accepts its next word, C-g or any other command dismisses
;; it; typing the suggestion's own characters keeps the rest shown.  As copilot.el does.
;;
;; It asks the lich server of the buffer with `textDocument/inlineCompletion' through the
;; adapter of lich-eglot.el or lich-lsp-mode.el, after `lich-completion-delay' seconds of
;; quiet (the server waits its own `completion_debounce_ms' too, and cancels a request a newer
;; one supersedes).  It is independent of `completion-at-point', which keeps offering the
;; same suggestion as a completion candidate.
;;
;; Setup: (require 'lich-completion) and turn the mode on where lich runs, e.g.
;;   (add-hook 'eglot-managed-mode-hook #'lich-completion-mode)
;; or M-x lich-completion-mode in a buffer.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'lich)

(defgroup lich-completion nil
  "Ghost text from lich's completion model."
  :group 'lich
  :prefix "lich-completion-")

(defcustom lich-completion-delay 0.1
  "Seconds of quiet after an edit before a suggestion is asked for.
The client may wait longer: Eglot tells the server of an edit only
after `eglot-send-changes-idle-time', and the request waits for that."
  :type 'number)

(defface lich-completion-ghost-face '((((class color) (min-colors 88)) :foreground "grey50")
                                      (((class color) (min-colors 8)) :inherit shadow)
                                      (t :inherit shadow))
  "The suggestion shown after the cursor.")

(defvar lich-completion-mode)  ; the minor mode, defined below

(defvar-local lich-completion--overlay nil
  "The overlay that shows the suggestion, or nil.")
(defvar-local lich-completion--shown nil
  "The suggestion shown after point, or nil.
While non-nil, `lich-completion-active-map' is active (TAB accepts).")
(defvar-local lich-completion--timer nil
  "The idle timer of the next request.")
(defvar-local lich-completion--last-tick nil
  "`buffer-chars-modified-tick' after the last command.")
(defvar-local lich-completion--requests 0
  "How many suggestions this buffer asked for (a newer answer wins).")

(defvar lich-completion-active-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "TAB") #'lich-completion-accept)
    (define-key map (kbd "<tab>") #'lich-completion-accept)
    (define-key map (kbd "M-f") #'lich-completion-accept-word)
    (define-key map (kbd "C-g") #'lich-completion-dismiss)
    map)
  "Keys while a suggestion is shown: TAB accepts, M-f takes a word, C-g dismisses.")

(defvar lich-completion--map-alist
  (list (cons 'lich-completion--shown lich-completion-active-map))
  "For `emulation-mode-map-alists': the active map while a suggestion shows.")

(defconst lich-completion--own-commands
  '(lich-completion-accept lich-completion-accept-word lich-completion-dismiss)
  "Commands that update the suggestion themselves.")

;;;; Showing

(defun lich-completion--hide ()
  "Take the suggestion off the screen."
  (when (overlayp lich-completion--overlay) (delete-overlay lich-completion--overlay))
  (setq lich-completion--overlay nil
        lich-completion--shown nil))

(defun lich-completion--show (text)
  "Show TEXT after point as ghost text."
  (lich-completion--hide)
  (let ((overlay (make-overlay (point) (point) nil nil t))
        (display (propertize text 'face 'lich-completion-ghost-face)))
    ;; The cursor stays before the ghost text, where typing goes.
    (put-text-property 0 1 'cursor t display)
    (overlay-put overlay 'after-string display)
    (overlay-put overlay 'priority 100)
    (overlay-put overlay 'lich-completion t)
    (setq lich-completion--overlay overlay
          lich-completion--shown text
          ;; The suggestion is for the text as it is now.
          lich-completion--last-tick (buffer-chars-modified-tick))))

;;;; Asking

(defun lich-completion--target ()
  "The lich connection that manages this buffer, as (ADAPTER . CONNECTION), or nil."
  (cl-loop for adapter in lich-adapters
           for conn = (funcall (lich-adapter-connection adapter) nil)
           when conn return (cons adapter conn)))

(defun lich-completion--text (result)
  "The text of the first item of an `inlineCompletion' RESULT, or nil."
  (let* ((items (or (lich--json-array (lich-json-get result "items"))
                    (lich--json-array result)))
         (insert (and items (lich-json-get (car items) "insertText")))
         ;; A snippet string: its value (lich sends plain text).
         (text (if (lich--json-object-p insert) (lich-json-get insert "value") insert)))
    (and (stringp text) (not (string-empty-p text)) text)))

(defun lich-completion--request (buffer)
  "Ask for a suggestion at point in BUFFER, if it is still where the user types."
  (when (and (buffer-live-p buffer) (eq buffer (window-buffer (selected-window))))
    (with-current-buffer buffer
      (let ((target (and lich-completion-mode (lich-completion--target))))
        (when target
          (let* ((adapter (car target))
                 (tick (buffer-chars-modified-tick))
                 (point (point))
                 (request (cl-incf lich-completion--requests))
                 (params (list :textDocument
                               (list :uri (funcall (lich-adapter-document-uri adapter)))
                               :position (funcall (lich-adapter-position adapter) point)
                               ;; Automatic: asked as the user typed, not by a command.
                               :context (list :triggerKind 2))))
            (funcall (lich-adapter-async-request adapter) (cdr target)
                     "textDocument/inlineCompletion" params
                     (lambda (result)
                       (when (buffer-live-p buffer)
                         (with-current-buffer buffer
                           ;; Only for the text and place it was asked for, and the newest ask.
                           (when (and lich-completion-mode
                                      (= request lich-completion--requests)
                                      (= tick (buffer-chars-modified-tick))
                                      (= point (point)))
                             (let ((text (lich-completion--text result)))
                               (if text (lich-completion--show text) (lich-completion--hide)))))))
                     ;; A failed suggestion is no suggestion; the server logs why.
                     #'ignore)))))))

(defun lich-completion--schedule ()
  "Ask for a suggestion once the user stops typing."
  (when (timerp lich-completion--timer) (cancel-timer lich-completion--timer))
  (setq lich-completion--timer
        (run-with-idle-timer lich-completion-delay nil
                             #'lich-completion--request (current-buffer))))

(defun lich-completion--typed-ahead ()
  "Whether the command just typed the suggestion's first character.
Then the rest stays shown (no new request is needed for it)."
  (when (and lich-completion--shown
             (eq this-command 'self-insert-command)
             (overlayp lich-completion--overlay)
             (= (point) (1+ (overlay-start lich-completion--overlay)))
             (eq (char-before) (aref lich-completion--shown 0)))
    (let ((rest (substring lich-completion--shown 1)))
      (if (string-empty-p rest) (lich-completion--hide) (lich-completion--show rest)))
    t))

(defun lich-completion--post-command ()
  "After each command: keep, move or drop the suggestion; ask again after an edit."
  (let ((changed (not (eql lich-completion--last-tick (buffer-chars-modified-tick)))))
    (setq lich-completion--last-tick (buffer-chars-modified-tick))
    (cond ((memq this-command lich-completion--own-commands))
          ((and changed (lich-completion--typed-ahead)))
          ;; Nothing happened to the text or to point (a scroll, or the hook's run as a command
          ;; loop starts): the suggestion stays.
          ((and (not changed) (overlayp lich-completion--overlay)
                (= (point) (overlay-start lich-completion--overlay))))
          (t
           (lich-completion--hide)
           (when (and changed buffer-file-name (not (region-active-p)))
             (lich-completion--schedule))))))

;;;; Commands

(defun lich-completion-accept ()
  "Insert the suggestion shown after point."
  (interactive)
  (let ((text lich-completion--shown))
    (lich-completion--hide)
    (when text (insert text))))

(defun lich-completion-accept-word ()
  "Insert the next word of the suggestion; the rest stays shown."
  (interactive)
  (let* ((text lich-completion--shown)
         (end (and text (string-match "\\W*\\w+" text) (match-end 0))))
    (lich-completion--hide)
    (when text
      (insert (substring text 0 (or end (length text))))
      (when (and end (< end (length text)))
        (lich-completion--show (substring text end))))))

(defun lich-completion-dismiss ()
  "Take the suggestion away."
  (interactive)
  (lich-completion--hide))

;;;###autoload
(define-minor-mode lich-completion-mode
  "Ghost text from lich's completion model as you type.
TAB accepts the suggestion, M-f its next word, C-g dismisses it.
Needs a lich server managing the buffer (lich-eglot or lich-lsp-mode)
and a `completion' model in the lich config (docs/completions.md).

\\{lich-completion-active-map}"
  :lighter " lich-ghost"
  (if lich-completion-mode
      (progn
        (add-to-list 'emulation-mode-map-alists 'lich-completion--map-alist)
        (setq lich-completion--last-tick (buffer-chars-modified-tick))
        (add-hook 'post-command-hook #'lich-completion--post-command nil t))
    (remove-hook 'post-command-hook #'lich-completion--post-command t)
    (when (timerp lich-completion--timer) (cancel-timer lich-completion--timer))
    (lich-completion--hide)))

(provide 'lich-completion)
;;; lich-completion.el ends here

;;; lich-next-edit.el --- Next edit suggestions from lich-lsp  -*- lexical-binding: t; -*-

;; This file is part of lich-lsp.

;;; Commentary:

;; `lich-next-edit-mode' (a buffer-local minor mode, autoloaded from lich.el): after you edit,
;; ask the lich server's `textDocument/copilotInlineEdit' (Copilot's shape, issue #47) for the
;; edits you are about to make, near point or away from it, and show each at its place with
;; overlays: the text it replaces in `lich-next-edit-deleted', the text it inserts after it in
;; `lich-next-edit-inserted', an arrow in the left fringe.  TAB moves point to the suggestion,
;; TAB again accepts it; C-g dismisses.  Both keys keep their usual meaning while nothing is
;; shown.  Requests go through the lich adapter (Eglot or lsp-mode) of the buffer, after
;; `lich-next-edit-delay' seconds without an edit; an answer for text that has changed since is
;; dropped.  Nothing is asked while the server has no next-edit model (lich.status
;; `next_edit.model'; the `next_edit' key of the user's lich config).
;;
;;   (add-hook 'python-mode-hook #'lich-next-edit-mode)

;;; Code:

(require 'cl-lib)
(require 'lich)

(defgroup lich-next-edit nil
  "Next edit suggestions from lich-lsp."
  :group 'lich
  :prefix "lich-next-edit-")

(defcustom lich-next-edit-delay 0.1
  "Seconds without an edit before a next edit suggestion is asked for."
  :type 'number)

(defface lich-next-edit-deleted
  '((((class color)) :background "#ffdddd" :foreground "#a00000" :strike-through t)
    (t :strike-through t))
  "Face of the text a next edit suggestion replaces.")

(defface lich-next-edit-inserted
  '((((class color)) :background "#ddffdd" :foreground "#006000")
    (t :underline t))
  "Face of the text a next edit suggestion inserts.")

(defface lich-next-edit-fringe
  '((t :inherit success))
  "Face of the fringe arrow on a next edit suggestion's line.")

(defconst lich-next-edit-method "textDocument/copilotInlineEdit")
(defconst lich-next-edit--model-recheck 30
  "Seconds before lich.status is read again while there is no next-edit model.")

(defvar-local lich-next-edit--overlays nil
  "The suggestions shown: overlays over the text each replaces, in order.")
(defvar-local lich-next-edit--timer nil)
(defvar-local lich-next-edit--generation 0
  "Counts requests and edits.
An answer is shown only if nothing happened since it was asked.")
(defvar-local lich-next-edit--accepting nil
  "Non-nil while a suggestion is applied: its change keeps the other suggestions.")
(defvar-local lich-next-edit--model nil
  "The server's next-edit model as lich.status said.
A string, `none', or nil (not read yet).")
(defvar-local lich-next-edit--model-read-at 0)
(defvar-local lich-next-edit--ask-when-known nil
  "Non-nil when an edit came before lich.status answered: ask once it has.")

(defvar lich-next-edit-stats (list :requests 0 :shown 0 :accepted 0)
  "Counters for the tests and the curious.")

(defun lich-next-edit--count (key)
  (setq lich-next-edit-stats
        (plist-put lich-next-edit-stats key (1+ (plist-get lich-next-edit-stats key)))))

;;;; Showing

(defun lich-next-edit--clear ()
  "Remove the suggestions shown."
  (mapc #'delete-overlay lich-next-edit--overlays)
  (setq lich-next-edit--overlays nil))

(defun lich-next-edit--point-at (position)
  "The buffer position of the LSP POSITION.
Columns count UTF-16 code units, as Eglot and lsp-mode do by default."
  (save-excursion
    (save-restriction
      (widen)
      (goto-char (point-min))
      (forward-line (lich-json-get position "line"))
      (let ((units (lich-json-get position "character"))
            (end (line-end-position)))
        (while (and (> units 0) (< (point) end))
          (setq units (- units (if (> (char-after) #xFFFF) 2 1)))
          (forward-char 1)))
      (point))))

(defun lich-next-edit--fringe ()
  (propertize " " 'display '(left-fringe right-triangle lich-next-edit-fringe)))

(defun lich-next-edit--show (edits)
  "Show EDITS as overlays: the answer's `edits', a sequence of {range, text}."
  (lich-next-edit--clear)
  (let ((line-count (save-restriction (widen) (count-lines (point-min) (point-max))))
        overlays)
    (dolist (edit (append edits nil))
      (let* ((range (lich-json-get edit "range"))
             (text (lich-json-get edit "text"))
             (start (and range (lich-json-get range "start")))
             (end (and range (lich-json-get range "end"))))
        (when (and (stringp text) start end
                   (<= (lich-json-get end "line") line-count))
          (let* ((beg (lich-next-edit--point-at start))
                 (fin (lich-next-edit--point-at end))
                 (overlay (make-overlay beg (max beg fin) nil nil t)))
            (overlay-put overlay 'lich-next-edit text)
            (overlay-put overlay 'priority 100)
            (when (< beg fin)
              (overlay-put overlay 'face 'lich-next-edit-deleted))
            (unless (string-empty-p text)
              (overlay-put overlay 'after-string (propertize text 'face 'lich-next-edit-inserted)))
            (overlay-put overlay 'before-string (lich-next-edit--fringe))
            (push overlay overlays)))))
    (setq lich-next-edit--overlays
          (sort overlays (lambda (a b) (< (overlay-start a) (overlay-start b)))))
    (when lich-next-edit--overlays
      (lich-next-edit--count :shown))))

(defun lich-next-edit-current ()
  "The suggestions shown: a list of (START END TEXT).
START and END are buffer positions."
  (mapcar (lambda (overlay)
            (list (overlay-start overlay) (overlay-end overlay) (overlay-get overlay 'lich-next-edit)))
          lich-next-edit--overlays))

;;;; Asking

(defun lich-next-edit--read-model (buffer)
  "Read lich.status's next_edit.model for BUFFER (asynchronously)."
  (with-current-buffer buffer
    (setq lich-next-edit--model-read-at (float-time))
    (condition-case nil
      (lich--request-async
       "workspace/executeCommand"
       (list :command "lich.status" :arguments (vector (lich--empty-object)))
       (lambda (status)
         (when (buffer-live-p buffer)
           (with-current-buffer buffer
             (let* ((next-edit (lich-json-get status "next_edit"))
                    (model (and next-edit (lich-json-get next-edit "model"))))
               (setq lich-next-edit--model (if (and (stringp model) (not (string-empty-p model))) model 'none))
               (when (and lich-next-edit--ask-when-known (stringp lich-next-edit--model)
                          (eq (window-buffer) buffer))
                 (setq lich-next-edit--ask-when-known nil)
                 (lich-next-edit-request))))))
       #'ignore)
    (error nil))))

(defun lich-next-edit-request ()
  "Ask the lich server for next edits at point in the current buffer."
  (interactive)
  (let ((target (ignore-errors (lich--connection)))
        (buffer (current-buffer))
        (generation (cl-incf lich-next-edit--generation)))
    (unless lich-next-edit--model
      (setq lich-next-edit--ask-when-known t))
    (when (and target (stringp lich-next-edit--model))
      (let ((adapter (car target)))
        (lich-next-edit--count :requests)
        (funcall (lich-adapter-async-request adapter) (cdr target) lich-next-edit-method
                 (list :textDocument (list :uri (funcall (lich-adapter-document-uri adapter)))
                       :position (funcall (lich-adapter-position adapter) (point)))
                 (lambda (result)
                   (when (buffer-live-p buffer)
                     (with-current-buffer buffer
                       ;; Asked again, or edited, since: this answer is for other text.
                       (when (= generation lich-next-edit--generation)
                         (lich-next-edit--show (lich-json-get result "edits"))))))
                 #'ignore)))))

(defun lich-next-edit--after-change (&rest _)
  "After an edit: drop what is shown (unless an accept made it), ask after a pause."
  (cl-incf lich-next-edit--generation)
  (unless lich-next-edit--accepting
    (lich-next-edit--clear))
  (when (timerp lich-next-edit--timer)
    (cancel-timer lich-next-edit--timer))
  (when (and (eq lich-next-edit--model 'none)
             (> (- (float-time) lich-next-edit--model-read-at) lich-next-edit--model-recheck))
    (lich-next-edit--read-model (current-buffer)))
  (let ((buffer (current-buffer)))
    (setq lich-next-edit--timer
          (run-with-timer lich-next-edit-delay nil
                          (lambda ()
                            ;; Asked about the buffer the user is in, at its point.
                            (when (and (buffer-live-p buffer) (eq (window-buffer) buffer))
                              (with-current-buffer buffer
                                (setq lich-next-edit--timer nil)
                                (lich-next-edit-request))))))))

;;;; Keys

(defun lich-next-edit--target ()
  "The overlay TAB goes to: the first ending at or after point, else the first."
  (or (cl-find-if (lambda (overlay) (>= (overlay-end overlay) (point))) lich-next-edit--overlays)
      (car lich-next-edit--overlays)))

(defun lich-next-edit-accept-or-jump ()
  "Move point to the next edit suggestion; on it, accept it."
  (interactive)
  (let ((overlay (lich-next-edit--target)))
    (when overlay
      (let ((start (overlay-start overlay))
            (end (overlay-end overlay))
            (text (overlay-get overlay 'lich-next-edit)))
        (if (not (<= start (point) end))
            (goto-char start)
          (setq lich-next-edit--overlays (delq overlay lich-next-edit--overlays))
          (delete-overlay overlay)
          (let ((lich-next-edit--accepting t))
            (goto-char start)
            (delete-region start end)
            (insert text))
          (lich-next-edit--count :accepted))))))

(defun lich-next-edit-dismiss ()
  "Drop the next edit suggestions shown."
  (interactive)
  (cl-incf lich-next-edit--generation)
  (lich-next-edit--clear))

(defun lich-next-edit--when-shown (command)
  "COMMAND while a suggestion is shown, else nil.
Then the key does what it does without this mode."
  (and lich-next-edit--overlays command))

(defvar lich-next-edit-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "TAB") '(menu-item "" lich-next-edit-accept-or-jump :filter lich-next-edit--when-shown))
    (define-key map (kbd "<tab>") '(menu-item "" lich-next-edit-accept-or-jump :filter lich-next-edit--when-shown))
    (define-key map (kbd "C-g") '(menu-item "" lich-next-edit-dismiss :filter lich-next-edit--when-shown))
    map)
  "Keys of `lich-next-edit-mode', active only while a suggestion is shown.")

;;;###autoload
(define-minor-mode lich-next-edit-mode
  "Show the lich server's next edit suggestions as you edit.
TAB moves to a suggestion, TAB again accepts it, \\[keyboard-quit] dismisses it."
  :lighter " Next"
  :keymap lich-next-edit-mode-map
  (if lich-next-edit-mode
      (progn
        (add-hook 'after-change-functions #'lich-next-edit--after-change nil t)
        (lich-next-edit--read-model (current-buffer)))
    (remove-hook 'after-change-functions #'lich-next-edit--after-change t)
    (when (timerp lich-next-edit--timer)
      (cancel-timer lich-next-edit--timer))
    (lich-next-edit-dismiss)))

(provide 'lich-next-edit)
;;; lich-next-edit.el ends here

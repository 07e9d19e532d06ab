// The review screen's keyboard (the only script of the app; CSP script-src 'self').
(function () {
  "use strict";
  var form = document.getElementById("review");
  if (!form) { return; }
  var help = document.getElementById("help");

  function typing(el) {
    return el && (el.tagName === "TEXTAREA" || (el.tagName === "INPUT" && el.type === "text"));
  }
  function press(selector) {
    var el = form.querySelector(selector);
    if (el) { el.click(); }
    return el;
  }
  function submitWith(id) {
    var button = document.getElementById(id);
    if (button) { form.requestSubmit(button); }
  }

  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    var active = document.activeElement;
    if (ev.key === "Escape") {
      if (help && !help.hidden) { help.hidden = true; } else if (typing(active)) { active.blur(); }
      ev.preventDefault();
      return;
    }
    if (typing(active)) { return; }
    var key = ev.key;
    var handled = true;
    if (key === "?") {
      if (help) { help.hidden = !help.hidden; }
    } else if (key === "a" || key === "b" || key === "t") {
      press('input[name="choice"][data-key="' + key + '"]');
    } else if (key >= "1" && key <= "5") {
      var axis = active && active.closest ? active.closest("fieldset.axis") : null;
      if (axis) {
        var radio = axis.querySelector('input[value="' + key + '"]');
        radio.checked = true;
        radio.focus();
      } else {
        handled = false;
      }
    } else if (key === "Enter") {
      submitWith("submit");
    } else if (key === "s") {
      submitWith("skip");
    } else if (key === "Backspace") {
      var back = document.getElementById("back");
      if (back) { window.location.href = back.href; }
    } else if (key === "c") {
      document.getElementById("correct_answer").focus();
    } else if (/^[a-z]$/.test(key)) {
      var tag = form.querySelector('input[name="tag"][data-key="' + key + '"]');
      if (tag) { tag.checked = !tag.checked; } else { handled = false; }
    } else {
      handled = false;
    }
    if (handled) { ev.preventDefault(); }
  });
})();

// Small progressive enhancement; every page works without it.
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    // After a form came back with errors, take keyboard and screen-reader users to them.
    var summary = document.querySelector(".error-summary");
    if (summary) { summary.focus(); return; }
    // After an action, the address ends in the card it acted on (#m-…) or the messages
    // (#messages): the browser scrolls there; move the focus there too.
    var id = window.location.hash.slice(1);
    var target = id ? document.getElementById(decodeURIComponent(id)) : null;
    if (target && target.hasAttribute("tabindex")) { target.focus(); }
  });
  // Opening an inline "Correct" form puts the cursor in its field.
  document.addEventListener("toggle", function (event) {
    var details = event.target;
    if (details.matches && details.matches("details.inline-form") && details.open) {
      var input = details.querySelector("input[name=value]");
      if (input) { input.focus(); input.select(); }
    }
  }, true);
}());

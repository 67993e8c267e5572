// Arbiter's pages: a theme toggle and rows that open. Loaded in <head> (no defer) so the
// stored theme applies before the first paint; everything else waits for the document.
(function () {
  "use strict";
  var root = document.documentElement;
  var stored = null;
  try { stored = window.localStorage.getItem("arbiter-theme"); } catch (e) { stored = null; }
  if (stored === "light" || stored === "dark") { root.setAttribute("data-theme", stored); }

  function current() {
    var set = root.getAttribute("data-theme");
    if (set === "light" || set === "dark") { return set; }
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches
      ? "dark" : "light";
  }

  function label(button) {
    var next = current() === "dark" ? "light" : "dark";
    button.textContent = next === "dark" ? "Dark" : "Light";
    button.setAttribute("aria-label", "Switch to the " + next + " theme");
  }

  function toggleRow(button) {
    var row = document.getElementById(button.getAttribute("aria-controls"));
    if (!row) { return; }
    var open = button.getAttribute("aria-expanded") !== "true";
    button.setAttribute("aria-expanded", open ? "true" : "false");
    row.hidden = !open;
  }

  document.addEventListener("DOMContentLoaded", function () {
    var toggle = document.getElementById("theme-toggle");
    if (toggle) {
      toggle.hidden = false;
      label(toggle);
      toggle.addEventListener("click", function () {
        var next = current() === "dark" ? "light" : "dark";
        root.setAttribute("data-theme", next);
        try { window.localStorage.setItem("arbiter-theme", next); } catch (e) { /* private mode */ }
        label(toggle);
      });
    }
    document.addEventListener("click", function (event) {
      var target = event.target;
      var button = target && target.closest ? target.closest("button.opener") : null;
      if (button) { toggleRow(button); }
    });
    var all = document.querySelectorAll("[data-open-all]");
    Array.prototype.forEach.call(all, function (control) {
      control.hidden = false;
      control.addEventListener("click", function () {
        var openers = document.querySelectorAll("button.opener[aria-expanded='false']");
        Array.prototype.forEach.call(openers, toggleRow);
      });
    });
  });
})();

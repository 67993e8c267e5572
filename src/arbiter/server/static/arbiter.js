// Arbiter's pages: a theme toggle, rows that open, and the annotation queue's keys. Loaded in <head> (no defer) so the
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

  // The queue's keys: a agree, d disagree (on the ruling in focus), j / k the next and
  // the previous ruling. Keys typed into a field, or with a modifier, are left alone.
  function queueKeys() {
    var cards = Array.prototype.slice.call(document.querySelectorAll("[data-ruling]"));
    if (!cards.length) { return; }
    var at = -1;
    function focus(index) {
      at = Math.max(0, Math.min(cards.length - 1, index));
      cards[at].focus();
      cards[at].scrollIntoView({ block: "nearest" });
    }
    cards.forEach(function (card, index) {
      card.addEventListener("focusin", function () { at = index; });
    });
    document.addEventListener("keydown", function (event) {
      var target = event.target;
      var tag = target && target.tagName ? target.tagName.toLowerCase() : "";
      if (event.altKey || event.ctrlKey || event.metaKey || tag === "input" ||
          tag === "textarea" || tag === "select" || (target && target.isContentEditable)) {
        return;
      }
      var key = event.key;
      if (key === "j") { focus(at + 1); event.preventDefault(); return; }
      if (key === "k") { focus(at - 1); event.preventDefault(); return; }
      if (key !== "a" && key !== "d") { return; }
      var card = cards[at < 0 ? 0 : at];
      var button = card.querySelector("button[value='" + (key === "a" ? "agree" : "disagree") + "']");
      var name = card.querySelector("input[name='annotator'][type='text']");
      if (name && !name.value) { name.focus(); event.preventDefault(); return; }
      if (button) { button.click(); event.preventDefault(); }
    });
  }

  /* A panel that scrolls sideways (a wide table or chart on a narrow screen) takes keyboard
     focus, so the arrow keys can scroll it; one that fits stays out of the tab order. */
  var SCROLLERS = ".table-wrap, .chart-scroll, .chart-panel, .wf-scroll";
  function scrollersFocusable() {
    Array.prototype.forEach.call(document.querySelectorAll(SCROLLERS), function (panel) {
      if (panel.scrollWidth > panel.clientWidth + 1) {
        panel.setAttribute("tabindex", "0");
      } else if (panel.getAttribute("tabindex") === "0") {
        panel.removeAttribute("tabindex");
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    queueKeys();
    scrollersFocusable();
    window.addEventListener("resize", scrollersFocusable);
    document.addEventListener("toggle", scrollersFocusable, true);
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

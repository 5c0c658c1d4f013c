// Filters and evidence highlighting for the transcript viewer. Reads only data-* attributes; no network.
(function () {
  "use strict";
  var byId = function (id) { return document.getElementById(id); };
  var criterion = byId("f-criterion"), result = byId("f-result"), tag = byId("f-tag"), status = byId("f-status");
  var convs = Array.prototype.slice.call(document.querySelectorAll("details.conv"));

  // A conversation's verdicts as "|criterion=result|...", read once from its side panel: each verdict drawn
  // alone (data-criterion, class r-RESULT) and each line of plain ones (class r-RESULT, the names last).
  function resultOf(el) { var m = /(?:^|\s)r-(\S+)/.exec(el.className); return m ? m[1] : ""; }
  function verdictKeys(conv) {
    var keys = "|";
    conv.querySelectorAll(".side > .verdict").forEach(function (v) {
      keys += v.getAttribute("data-criterion") + "=" + resultOf(v) + "|";
    });
    conv.querySelectorAll(".side > .verdicts").forEach(function (v) {
      var r = resultOf(v);
      v.lastChild.textContent.trim().split(", ").forEach(function (c) { keys += c + "=" + r + "|"; });
    });
    return keys;
  }
  var keysOf = new Map(convs.map(function (conv) { return [conv, verdictKeys(conv)]; }));

  function matches(conv) {
    var verdicts = keysOf.get(conv);
    var c = criterion.value, r = result.value, t = tag.value, s = status.value;
    if (t && (conv.getAttribute("data-tags") || "|").indexOf("|" + t + "|") < 0) { return false; }
    if (s && conv.getAttribute("data-status") !== s) { return false; }
    if (c && r) { return verdicts.indexOf("|" + c + "=" + r + "|") >= 0; }
    if (c) { return verdicts.indexOf("|" + c + "=") >= 0; }
    if (r) { return verdicts.indexOf("=" + r + "|") >= 0; }
    return true;
  }

  function apply() {
    var shown = 0;
    convs.forEach(function (conv) {
      var ok = matches(conv);
      conv.classList.toggle("hidden", !ok);
      if (ok) { shown += 1; }
    });
    byId("shown").textContent = shown + " of " + convs.length + " conversations shown";
  }

  [criterion, result, tag, status].forEach(function (el) { if (el) { el.addEventListener("change", apply); } });
  apply();

  // Clicking a verdict outlines the transcript passages its evidence quotes.
  document.querySelectorAll(".verdict").forEach(function (el) {
    el.addEventListener("click", function () {
      var conv = el.closest("details.conv");
      var id = el.getAttribute("data-criterion");
      conv.querySelectorAll("mark").forEach(function (m) {
        var list = (m.getAttribute("data-criteria") || "").split("|");
        m.classList.toggle("active", list.indexOf(id) >= 0);
      });
    });
  });

  // A link to a conversation (#t12) opens it.
  function openTarget() {
    var target = window.location.hash ? document.getElementById(window.location.hash.slice(1)) : null;
    if (target && target.tagName === "DETAILS") { target.open = true; }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
})();

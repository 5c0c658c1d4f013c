// The review desk's only script: live validation in the editor. No other site is ever contacted.
"use strict";
(function () {
  const form = document.getElementById("editor");
  if (!form) return;
  const text = document.getElementById("text");
  const box = document.getElementById("problems");
  const csrf = document.querySelector('meta[name="csrf"]').content;
  let timer = null;
  let seq = 0;
  function show(problems) {
    box.replaceChildren();
    if (!problems.length) {
      const ok = document.createElement("span");
      ok.className = "ok";
      ok.textContent = "valid";
      box.appendChild(ok);
      return;
    }
    const list = document.createElement("ul");
    for (const problem of problems) {
      const item = document.createElement("li");
      item.textContent = problem; // text, never markup
      list.appendChild(item);
    }
    box.appendChild(list);
  }
  async function check() {
    const mine = ++seq;
    const body = JSON.stringify({
      area: form.elements.area.value,
      path: form.elements.path.value,
      text: text.value,
    });
    const response = await fetch(form.dataset.validate, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: body,
      credentials: "same-origin",
    });
    if (mine !== seq || !response.ok) return;
    show((await response.json()).problems);
  }
  text.addEventListener("input", function () {
    box.classList.add("checking");
    clearTimeout(timer);
    timer = setTimeout(function () {
      check().finally(function () { box.classList.remove("checking"); });
    }, 300);
  });
})();

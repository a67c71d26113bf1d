// The annotation page: stepping through the answers' differences, and the rating form's checks.
// The word rule is the server's (playlisteval/human/words.py); the server checks everything again.
"use strict";

const WORD = /[\p{L}\p{N}]+(?:['\u2019-][\p{L}\p{N}]+)*/gu;

function countWords(text) {
  return (text.match(WORD) || []).length;
}

function setUpDifferences() {
  const answers = document.querySelector(".answers");
  if (!answers) return;
  const total = Number(answers.dataset.changes || 0);
  const position = document.getElementById("diff-position");
  let current = -1;
  function show(k) {
    document.querySelectorAll("mark.current").forEach((m) => m.classList.remove("current"));
    current = ((k % total) + total) % total;
    for (const side of ["answer-a", "answer-b"]) {
      const marks = document.querySelectorAll(`#${side} mark[data-diff="${current}"]`);
      marks.forEach((m) => m.classList.add("current"));
      if (marks.length) marks[0].scrollIntoView({ block: "center", behavior: "auto" });
    }
    position.textContent = `difference ${current + 1} of ${total}`;
  }
  const next = document.getElementById("next-diff");
  const prev = document.getElementById("prev-diff");
  if (total === 0) {
    next.disabled = true;
    prev.disabled = true;
    position.textContent = "the answers are identical";
  }
  next.addEventListener("click", () => show(current + 1));
  prev.addEventListener("click", () => show(current < 0 ? total - 1 : current - 1));
  document.getElementById("show-diff").addEventListener("change", (event) => {
    answers.classList.toggle("plain", !event.target.checked);
  });
}

function setUpForm() {
  const form = document.getElementById("rating-form");
  if (!form) return;
  const minWords = Number(form.dataset.minWords);
  const reason = document.getElementById("reason");
  const counter = document.getElementById("word-count");
  const submit = document.getElementById("send");
  function check() {
    const words = countWords(reason.value);
    const chosen = form.querySelector('input[name="choice"]:checked') !== null;
    counter.textContent = String(words);
    counter.classList.toggle("short", words < minWords);
    submit.disabled = !(chosen && words >= minWords);
    return !submit.disabled;
  }
  form.addEventListener("input", check);
  form.addEventListener("change", check);
  form.addEventListener("submit", (event) => {
    if (!check()) event.preventDefault();
  });
  check();
}

document.addEventListener("DOMContentLoaded", () => {
  setUpDifferences();
  setUpForm();
});

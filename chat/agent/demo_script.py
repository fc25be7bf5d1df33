"""What the demo model says, in English, Italian and Traditional Chinese."""

from __future__ import annotations

TEXT: dict[str, dict[str, str]] = {
    "feedback_search": {
        "en": "Looking up “{query}” in the knowledge base",
        "it": "Cerco “{query}” nella base di conoscenza",
        "zh": "正在知識庫中查詢「{query}」",
    },
    "feedback_calculator": {
        "en": "Calculating {expression}",
        "it": "Calcolo {expression}",
        "zh": "正在計算 {expression}",
    },
    "feedback_datetime": {
        "en": "Checking the current date and time",
        "it": "Controllo la data e l'ora attuali",
        "zh": "正在查詢目前的日期與時間",
    },
    "feedback_surveys": {
        "en": "Comparing salary surveys for “{role}”",
        "it": "Confronto i sondaggi sugli stipendi per “{role}”",
        "zh": "正在比較「{role}」的薪資調查",
    },
    "feedback_connect": {
        "en": "Opening {server}",
        "it": "Apro {server}",
        "zh": "正在開啟 {server}",
    },
    "feedback_offer": {
        "en": "Drafting the offer letter",
        "it": "Preparo la lettera d'offerta",
        "zh": "正在草擬錄取信",
    },
    "feedback_tool": {
        "en": "Running the tool you named",
        "it": "Eseguo lo strumento che hai indicato",
        "zh": "正在執行你指定的工具",
    },
    "surveys": {
        "en": "Across five salary surveys, the median for **{role}** is **{median} €** a year:",
        "it": "Su cinque sondaggi, lo stipendio mediano per **{role}** è di **{median} €** "
        "l'anno:",
        "zh": "在五份薪資調查中，**{role}** 的年薪中位數為 **{median} €**：",
    },
    "tool_said": {
        "en": "The tool {tool} answered: {text}",
        "it": "Lo strumento {tool} ha risposto: {text}",
        "zh": "工具 {tool} 回覆：{text}",
    },
    "reasoning": {
        "en": "The user wants a careful answer. I have what I need; I will answer plainly, "
        "step by step, and say what I am unsure of.",
        "it": "L'utente vuole una risposta ponderata. Ho ciò che serve: risponderò con "
        "chiarezza, passo dopo passo, dicendo di cosa non sono sicuro.",
        "zh": "使用者想要一個周全的回答。我已掌握所需資料，會一步一步清楚回答，並說明不確定之處。",
    },
    "reasoning_tools": {
        "en": "The user wants a careful answer. Before answering I should check what the "
        "tools can tell me rather than guess.",
        "it": "L'utente vuole una risposta ponderata. Prima di rispondere devo verificare "
        "cosa dicono gli strumenti, invece di tirare a indovinare.",
        "zh": "使用者想要一個周全的回答。回答之前，我應該先查看工具能提供的資料，而不是猜測。",
    },
    "feedback_email": {
        "en": "Sending an email to {to}",
        "it": "Invio un'email a {to}",
        "zh": "正在寄電子郵件給 {to}",
    },
    "email_subject": {
        "en": "A question from Glassbox",
        "it": "Una domanda da Glassbox",
        "zh": "來自 Glassbox 的問題",
    },
    "emailed": {
        "en": "Done: the email to {to} is in the outbox (this demo never delivers mail).",
        "it": "Fatto: l'email a {to} è nella posta in uscita (questa demo non consegna posta).",
        "zh": "完成：寄給 {to} 的郵件已放入寄件匣（此示範不會真的寄出郵件）。",
    },
    "email_not_sent": {
        "en": "I did not send the email ({reason}). Tell me if you want to change it.",
        "it": "Non ho inviato l'email ({reason}). Dimmi se vuoi cambiarla.",
        "zh": "我沒有寄出這封郵件（{reason}）。如需修改，請告訴我。",
    },
    "found": {
        "en": "Here is what the knowledge base says:",
        "it": "Ecco cosa dice la base di conoscenza:",
        "zh": "以下是知識庫中的相關內容：",
    },
    "follow_up": {
        "en": "Ask me to go deeper into any of these.",
        "it": "Chiedimi di approfondire uno di questi punti.",
        "zh": "如需深入了解其中任何一項，請告訴我。",
    },
    "nothing_found": {
        "en": "The knowledge base has nothing on this, so I am answering from general knowledge.",
        "it": "La base di conoscenza non contiene nulla su questo: "
        "rispondo con le mie conoscenze.",
        "zh": "知識庫中沒有相關資料，以下根據一般知識回答。",
    },
    "tool_failed": {
        "en": "I could not use {tool} just now ({reason}), so this is a general answer: "
        "prepare well, be specific, and ask for what you want.",
        "it": "Non sono riuscito a usare {tool} ({reason}): ecco una risposta generale. "
        "Preparati bene, sii concreto e chiedi ciò che desideri.",
        "zh": "目前無法使用 {tool}（{reason}），以下是一般性的回答："
        "充分準備、具體表達，並清楚提出你的需求。",
    },
    "opened": {
        "en": "{server} is open now: ask again and I will use its tools.",
        "it": "{server} ora è aperto: chiedimelo di nuovo e userò i suoi strumenti.",
        "zh": "{server} 已開啟：請再問一次，我會使用它的工具。",
    },
    "not_opened": {
        "en": "I could not open {server} ({reason}), so this answer does not use it.",
        "it": "Non sono riuscito ad aprire {server} ({reason}), quindi questa risposta non lo "
        "usa.",
        "zh": "無法開啟 {server}（{reason}），所以這個回答沒有使用它。",
    },
    "calculated": {
        "en": "{expression} = **{result}**",
        "it": "{expression} = **{result}**",
        "zh": "{expression} = **{result}**",
    },
    "now": {
        "en": "It is now **{when}** ({timezone}).",
        "it": "Ora sono le **{when}** ({timezone}).",
        "zh": "現在是 **{when}**（{timezone}）。",
    },
    "contact": {
        "en": "I have opened a contact form below: leave your details and an advisor will get "
        "back to you.",
        "it": "Ho aperto qui sotto un modulo di contatto: lascia i tuoi dati e un consulente ti "
        "ricontatterà.",
        "zh": "我已在下方開啟聯絡表單：留下你的資料，顧問會與你聯繫。",
    },
    "direct": {
        "en": "I am the Glassbox demo model, running offline. Nothing in the knowledge base "
        "matches “{question}”, so I am answering directly, without tools.\n\n"
        "Try asking about salaries, interviews, CVs or remote work to watch me search.",
        "it": "Sono il modello demo di Glassbox, offline. Nella base di conoscenza non c'è nulla "
        "su “{question}”, quindi rispondo direttamente, senza strumenti.\n\n"
        "Chiedimi di stipendi, colloqui, CV o lavoro da remoto per vedermi cercare.",
        "zh": "我是 Glassbox 的離線示範模型。知識庫中沒有與「{question}」相關的內容，"
        "所以我直接回答，不使用工具。\n\n試著問我薪資、面試、履歷或遠端工作，就能看到我查詢知識庫。",
    },
}


def say(key: str, language: str, **values: object) -> str:
    return TEXT[key][language].format(**values)

"""The demo knowledge base: career advice, in English, Italian and Chinese."""

from __future__ import annotations

DOCUMENTS: list[tuple[str, str, str]] = [
    (
        "Salary negotiation: preparing your number",
        "en",
        "Before you negotiate your salary, research the market range for the role, the "
        "city and your level of experience. Decide on three numbers: your target, the figure "
        "you open with (slightly above target) and your walk-away point. Anchor the "
        "conversation on the value you bring, not on what you need.",
    ),
    (
        "Salary negotiation: during the conversation",
        "en",
        "Let the employer name a figure first when you can. When you counter, give a specific "
        "number rather than a range, explain it with evidence, then stay quiet. Negotiate the "
        "whole package: bonus, equity, holidays, remote days and training budget all count.",
    ),
    (
        "Asking for a raise",
        "en",
        "Ask for a raise after a clear success, not during a budget freeze. Book a dedicated "
        "meeting, bring a short list of results with numbers, and name the salary you are "
        "asking for. If the answer is no, ask what would make it a yes in six months.",
    ),
    (
        "Preparing for a job interview",
        "en",
        "Read the job description and map each requirement to a story from your experience. "
        "Prepare answers in the STAR format (situation, task, action, result), research the "
        "company's products and recent news, and prepare three questions for the interviewer.",
    ),
    (
        "Behavioural interview questions",
        "en",
        "Behavioural interviews ask how you handled real situations: conflict with a "
        "colleague, a missed deadline, a decision with incomplete data. Answer with a concrete "
        "example, say what you personally did, and end with what you learned.",
    ),
    (
        "Writing a strong CV",
        "en",
        "Keep your CV (resume) to one or two pages. Lead with a two-line summary, then list "
        "experience with results rather than duties: 'cut release time from 2 weeks to 2 "
        "days' beats 'responsible for releases'. Tailor the keywords to each job posting.",
    ),
    (
        "Cover letters that get read",
        "en",
        "A cover letter should be short: why this company, why this role, and one story that "
        "proves you can do it. Address a person by name when possible and never repeat your "
        "CV line by line.",
    ),
    (
        "Remote work: staying visible",
        "en",
        "When you work remotely, write things down: weekly notes on progress, decisions and "
        "blockers. Keep your camera on in small meetings, over-communicate availability, and "
        "schedule regular one-to-ones with your manager.",
    ),
    (
        "Performance reviews: self-assessment",
        "en",
        "For your performance review, collect evidence all year: shipped work, metrics, "
        "feedback from colleagues. In the self-assessment, connect results to team goals, "
        "acknowledge one area to grow, and propose the next step in your career.",
    ),
    (
        "Changing careers",
        "en",
        "A career change works best in steps: find the skills that transfer, close the gap "
        "with a small project or course, and talk to people already in the field. Expect a "
        "lateral move or a small pay cut at first, and plan your savings accordingly.",
    ),
    (
        "Switching careers into front-end development",
        "en",
        "To move into front-end work from another field, learn HTML, CSS and JavaScript well "
        "before you pick up a framework such as React or Vue. Build two or three complete "
        "portfolio projects, publish their code, and contribute to open source.",
    ),
    (
        "Handling a job offer",
        "en",
        "When you receive a job offer, thank them, ask for it in writing and for a few days to "
        "decide. Compare offers on total compensation, growth and the team, and use a "
        "competing offer carefully and honestly in negotiation.",
    ),
    (
        "Networking without awkwardness",
        "en",
        "Good networking is helping first: share an article, make an introduction, give "
        "feedback. Keep a short list of people to follow up with each month, and ask for "
        "advice rather than for a job.",
    ),
    (
        "Burnout: warning signs",
        "en",
        "Warning signs of burnout include constant tiredness, cynicism about work and falling "
        "effectiveness. Talk to your manager about workload early, protect rest time, and ask "
        "for professional help if it lasts.",
    ),
    (
        "Negoziare lo stipendio",
        "it",
        "Prima di negoziare lo stipendio, informati sulle retribuzioni di mercato per il ruolo "
        "e la città. Stabilisci una cifra obiettivo e una soglia minima, e porta esempi "
        "concreti dei risultati ottenuti. Considera anche benefit, smart working e formazione.",
    ),
    (
        "Prepararsi a un colloquio di lavoro",
        "it",
        "Per prepararti a un colloquio di lavoro studia l'azienda e l'annuncio, prepara esempi "
        "con il metodo STAR e alcune domande da fare al selezionatore. Arriva puntuale e "
        "porta una copia del CV.",
    ),
    (
        "Scrivere un curriculum efficace",
        "it",
        "Un buon curriculum è breve e orientato ai risultati: indica numeri e obiettivi "
        "raggiunti, adatta le parole chiave all'annuncio e controlla l'ortografia.",
    ),
    (
        "Cambiare carriera verso lo sviluppo front-end",
        "it",
        "Per passare al front-end da un altro settore, impara bene HTML, CSS e JavaScript "
        "prima di un framework come React o Vue. Realizza due o tre progetti completi per il "
        "portfolio, pubblicane il codice e contribuisci a progetti open source.",
    ),
    (
        "Lavoro da remoto: consigli pratici",
        "it",
        "Nel lavoro da remoto definisci orari chiari, uno spazio dedicato e momenti di "
        "confronto regolari con il team. Documenta le decisioni per iscritto.",
    ),
    (
        "薪資談判技巧",
        "zh-Hant",
        "談判薪資前，先調查該職位在市場上的薪資範圍，設定目標數字與底線。談判時以你能帶來的價值為"
        "依據，並把獎金、股票、假期與遠端工作一併納入考量。",
    ),
    (
        "談薪水的時機與說法",
        "zh-Hant",
        "談薪水最好在拿到錄取通知之後、簽約之前。盡量讓對方先開價，再根據市場行情提出一個具體數字"
        "並說明理由；如果薪水無法再調，可以改談簽約獎金、年假或教育訓練預算。",
    ),
    (
        "轉職前端工程師",
        "zh-Hant",
        "想從其他領域轉職前端，先打好 HTML、CSS 與 JavaScript 的基礎，再學一個主流框架（例如 React"
        " 或 Vue）。做兩三個完整的作品集專案並公開原始碼，參與開源或接案來累積實戰經驗。",
    ),
    (
        "面試準備",
        "zh-Hant",
        "面試前研究公司與職缺內容，用 STAR 方法準備具體經歷，並準備幾個想問面試官的問題。",
    ),
    (
        "撰寫履歷",
        "zh-Hant",
        "履歷應簡潔並以成果為主，用數字說明貢獻，並依照職缺調整關鍵字。",
    ),
    (
        "遠端工作溝通",
        "zh-Hant",
        "遠端工作時要主動溝通：定期更新進度、記錄決策，並與主管保持固定的一對一會談。",
    ),
]

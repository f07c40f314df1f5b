/**
 * @module The reminders room's public surface: the scheduler that fires due reminders through
 * `Push`, and each session's target of the reminder tools. Its rows: store/reminders.ts.
 */
export { ReminderScheduler, type ReminderSchedulerOptions } from './scheduler.ts';
export { sessionReminders, type SessionRemindersOptions } from './session-reminders.ts';
export { RemindersSchema } from './reminders-settings.ts';
